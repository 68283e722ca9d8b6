/**
 * atax.cu: y = A^T (A x).
 *
 * atax_kernel1: tmp = A x, one thread per row of A.
 * atax_kernel2: y = A^T tmp, one thread per column of A.
 * The GPU pair runs TSTEPS times (each run computes the same result); the mean time is printed.
 */
#include <cuda.h>
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>

#include <util.h>

#include "atax.cuh"

#define GPU_DEVICE 0

void atax_cpu(DATA_TYPE* A, DATA_TYPE* x, DATA_TYPE* y, DATA_TYPE* tmp)
{
    for (int j = 0; j < N; j++) {
        y[j] = 0;
    }
    for (int i = 0; i < M; i++) {
        tmp[i] = 0;
        for (int j = 0; j < N; j++) {
            tmp[i] = tmp[i] + A[i * N + j] * x[j];
        }
        for (int j = 0; j < N; j++) {
            y[j] = y[j] + A[i * N + j] * tmp[i];
        }
    }
}

__global__ void atax_kernel1(DATA_TYPE* A, DATA_TYPE* x, DATA_TYPE* tmp)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;

    if (i < M) {
        DATA_TYPE acc = 0;
        for (int j = 0; j < N; j++) {
            acc += A[i * N + j] * x[j];
        }
        tmp[i] = acc;
    }
}

__global__ void atax_kernel2(DATA_TYPE* A, DATA_TYPE* y, DATA_TYPE* tmp)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;

    if (j < N) {
        DATA_TYPE acc = 0;
        for (int i = 0; i < M; i++) {
            acc += A[i * N + j] * tmp[i];
        }
        y[j] = acc;
    }
}

void ataxGpu(DATA_TYPE* A, DATA_TYPE* x, DATA_TYPE* y_outputFromGpu)
{
    double t_start, t_end;

    DATA_TYPE *A_gpu, *x_gpu, *y_gpu, *tmp_gpu;

    CUDA_CHECK(cudaMalloc((void**)&A_gpu, sizeof(DATA_TYPE) * M * N));
    CUDA_CHECK(cudaMalloc((void**)&x_gpu, sizeof(DATA_TYPE) * N));
    CUDA_CHECK(cudaMalloc((void**)&y_gpu, sizeof(DATA_TYPE) * N));
    CUDA_CHECK(cudaMalloc((void**)&tmp_gpu, sizeof(DATA_TYPE) * M));

    CUDA_CHECK(cudaMemcpy(A_gpu, A, sizeof(DATA_TYPE) * M * N, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(x_gpu, x, sizeof(DATA_TYPE) * N, cudaMemcpyHostToDevice));

    dim3 block(DIM_THREAD_BLOCK_X);
    dim3 grid1((M + DIM_THREAD_BLOCK_X - 1) / DIM_THREAD_BLOCK_X);
    dim3 grid2((N + DIM_THREAD_BLOCK_X - 1) / DIM_THREAD_BLOCK_X);

    t_start = wall_time();
    for (int t = 0; t < TSTEPS; t++) {
        atax_kernel1<<<grid1, block>>>(A_gpu, x_gpu, tmp_gpu);
        atax_kernel2<<<grid2, block>>>(A_gpu, y_gpu, tmp_gpu);
    }
    CUDA_CHECK_KERNEL();
    t_end = wall_time();
    fprintf(stdout, "GPU Runtime: %0.6lfs\n", (t_end - t_start) / TSTEPS);

    CUDA_CHECK(cudaMemcpy(y_outputFromGpu, y_gpu, sizeof(DATA_TYPE) * N, cudaMemcpyDeviceToHost));

    cudaFree(A_gpu);
    cudaFree(x_gpu);
    cudaFree(y_gpu);
    cudaFree(tmp_gpu);
}

int main(int argc, char** argv)
{
    double t_start, t_end;

    DATA_TYPE* A = host_alloc<DATA_TYPE>((size_t)M * N);
    DATA_TYPE* x = host_alloc<DATA_TYPE>(N);
    DATA_TYPE* y = host_alloc<DATA_TYPE>(N);
    DATA_TYPE* y_outputFromGpu = host_alloc<DATA_TYPE>(N);
    DATA_TYPE* tmp = host_alloc<DATA_TYPE>(M);

    init_random(A, (size_t)M * N, 21u);
    for (int j = 0; j < N; j++) {
        x[j] = j * 3.14159f / N;
    }

    CUDA_CHECK(cudaSetDevice(GPU_DEVICE));
    print_device();
    ataxGpu(A, x, y_outputFromGpu);

    t_start = wall_time();
    atax_cpu(A, x, y, tmp);
    t_end = wall_time();
    fprintf(stdout, "CPU Runtime: %0.6lfs\n", t_end - t_start);

    int fail = compare_arrays("y", y, y_outputFromGpu, N, PERCENT_DIFF_ERROR_THRESHOLD);

    free(A);
    free(x);
    free(y);
    free(y_outputFromGpu);
    free(tmp);

    return fail ? EXIT_FAILURE : EXIT_SUCCESS;
}

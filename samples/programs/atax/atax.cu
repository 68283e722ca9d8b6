/**
 * atax.cu: y = A^T (A x).
 *
 * atax_ax_kernel: tmp = A x, one thread per row of A.
 * atax_atv_kernel: y = A^T tmp, one thread per column of A.
 * The GPU pair runs TSTEPS times (each run computes the same result); the mean time is printed.
 */
#include <cuda.h>
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>

#include <util.h>

#include "atax.cuh"

#define GPU_DEVICE 0

void atax_host(const DATA_TYPE* A, const DATA_TYPE* x, DATA_TYPE* y, DATA_TYPE* tmp)
{
    // tmp = A x, a dot product per row; then y = A^T tmp, adding row i scaled by tmp[i] in turn.
    for (int i = 0; i < M; i++) {
        DATA_TYPE dot = 0;
        for (int j = 0; j < N; j++) {
            dot += A[i * N + j] * x[j];
        }
        tmp[i] = dot;
    }
    for (int j = 0; j < N; j++) {
        y[j] = 0;
    }
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            y[j] += A[i * N + j] * tmp[i];
        }
    }
}

__global__ void atax_ax_kernel(DATA_TYPE* A, DATA_TYPE* x, DATA_TYPE* tmp)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;

    if (row < M) {
        DATA_TYPE dot = 0;
        for (int c = 0; c < N; c++) {
            dot += A[row * N + c] * x[c];
        }
        tmp[row] = dot;
    }
}

__global__ void atax_atv_kernel(DATA_TYPE* A, DATA_TYPE* y, DATA_TYPE* tmp)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;

    if (col < N) {
        DATA_TYPE dot = 0;
        for (int r = 0; r < M; r++) {
            dot += A[r * N + col] * tmp[r];
        }
        y[col] = dot;
    }
}

void atax_on_device(DATA_TYPE* A, DATA_TYPE* x, DATA_TYPE* y_from_gpu)
{
    double t_start, t_end;

    DATA_TYPE *d_A, *d_x, *d_y, *d_tmp;

    CUDA_CHECK(cudaMalloc((void**)&d_A, sizeof(DATA_TYPE) * M * N));
    CUDA_CHECK(cudaMalloc((void**)&d_x, sizeof(DATA_TYPE) * N));
    CUDA_CHECK(cudaMalloc((void**)&d_y, sizeof(DATA_TYPE) * N));
    CUDA_CHECK(cudaMalloc((void**)&d_tmp, sizeof(DATA_TYPE) * M));

    CUDA_CHECK(cudaMemcpy(d_A, A, sizeof(DATA_TYPE) * M * N, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_x, x, sizeof(DATA_TYPE) * N, cudaMemcpyHostToDevice));

    dim3 block(DIM_THREAD_BLOCK_X);
    dim3 grid1((M + DIM_THREAD_BLOCK_X - 1) / DIM_THREAD_BLOCK_X);
    dim3 grid2((N + DIM_THREAD_BLOCK_X - 1) / DIM_THREAD_BLOCK_X);

    t_start = wall_time();
    for (int t = 0; t < TSTEPS; t++) {
        atax_ax_kernel<<<grid1, block>>>(d_A, d_x, d_tmp);
        atax_atv_kernel<<<grid2, block>>>(d_A, d_y, d_tmp);
    }
    CUDA_CHECK_KERNEL();
    t_end = wall_time();
    printf("GPU time: %.6f s a run\n", (t_end - t_start) / TSTEPS);

    CUDA_CHECK(cudaMemcpy(y_from_gpu, d_y, sizeof(DATA_TYPE) * N, cudaMemcpyDeviceToHost));

    cudaFree(d_A);
    cudaFree(d_x);
    cudaFree(d_y);
    cudaFree(d_tmp);
}

int main(int argc, char** argv)
{
    double t_start, t_end;

    DATA_TYPE* A = host_alloc<DATA_TYPE>((size_t)M * N);
    DATA_TYPE* x = host_alloc<DATA_TYPE>(N);
    DATA_TYPE* y = host_alloc<DATA_TYPE>(N);
    DATA_TYPE* y_from_gpu = host_alloc<DATA_TYPE>(N);
    DATA_TYPE* tmp = host_alloc<DATA_TYPE>(M);

    init_random(A, (size_t)M * N, 21u);
    for (int j = 0; j < N; j++) {
        x[j] = (DATA_TYPE)(j % 7) * 0.25f + 0.5f;
    }

    CUDA_CHECK(cudaSetDevice(GPU_DEVICE));
    print_device();
    atax_on_device(A, x, y_from_gpu);

    t_start = wall_time();
    atax_host(A, x, y, tmp);
    t_end = wall_time();
    printf("CPU time: %.6f s\n", t_end - t_start);

    int fail = compare_arrays("y", y, y_from_gpu, N, PERCENT_DIFF_ERROR_THRESHOLD);

    free(A);
    free(x);
    free(y);
    free(y_from_gpu);
    free(tmp);

    return fail ? EXIT_FAILURE : EXIT_SUCCESS;
}

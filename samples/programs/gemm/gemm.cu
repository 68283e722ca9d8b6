/**
 * gemm.cu: general matrix multiply, C = alpha * A * B + beta * C.
 *
 * One thread per element of C, accumulating straight into C in global memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>

#include <util.h>

#include "gemm.cuh"

#define GPU_DEVICE 0

void gemm(DATA_TYPE* A, DATA_TYPE* B, DATA_TYPE* C)
{
    int i, j, k;

    // i-k-j order: the inner loop walks rows of B and C.
    for (i = 0; i < NI; i++) {
        for (j = 0; j < NJ; j++) {
            C[i * NJ + j] *= BETA;
        }
        for (k = 0; k < NK; ++k) {
            DATA_TYPE a = ALPHA * A[i * NK + k];
            for (j = 0; j < NJ; j++) {
                C[i * NJ + j] += a * B[k * NJ + j];
            }
        }
    }
}

void init(DATA_TYPE* A, DATA_TYPE* B, DATA_TYPE* C)
{
    init_random(A, (size_t)NI * NK, 1u);
    init_random(B, (size_t)NK * NJ, 2u);
    init_random(C, (size_t)NI * NJ, 3u);
}

__global__ void gemm_kernel(DATA_TYPE alpha, DATA_TYPE beta, DATA_TYPE* a, DATA_TYPE* b, DATA_TYPE* c)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;

    if ((i < NI) && (j < NJ)) {
        c[i * NJ + j] *= beta;
        int k;
        for (k = 0; k < NK; k++) {
            c[i * NJ + j] += alpha * a[i * NK + k] * b[k * NJ + j];
        }
    }
}

void gemmCuda(DATA_TYPE* A, DATA_TYPE* B, DATA_TYPE* C, DATA_TYPE* C_outputFromGpu)
{
    double t_start, t_end;

    DATA_TYPE *A_gpu, *B_gpu, *C_gpu;

    CUDA_CHECK(cudaMalloc((void**)&A_gpu, sizeof(DATA_TYPE) * NI * NK));
    CUDA_CHECK(cudaMalloc((void**)&B_gpu, sizeof(DATA_TYPE) * NK * NJ));
    CUDA_CHECK(cudaMalloc((void**)&C_gpu, sizeof(DATA_TYPE) * NI * NJ));

    CUDA_CHECK(cudaMemcpy(A_gpu, A, sizeof(DATA_TYPE) * NI * NK, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(B_gpu, B, sizeof(DATA_TYPE) * NK * NJ, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(C_gpu, C, sizeof(DATA_TYPE) * NI * NJ, cudaMemcpyHostToDevice));

    dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
    dim3 grid((size_t)(ceil(((float)NJ) / ((float)block.x))), (size_t)(ceil(((float)NI) / ((float)block.y))));

    t_start = wall_time();
    gemm_kernel<<<grid, block>>>(ALPHA, BETA, A_gpu, B_gpu, C_gpu);
    CUDA_CHECK_KERNEL();
    t_end = wall_time();
    fprintf(stdout, "GPU Runtime: %0.6lfs\n", t_end - t_start);

    CUDA_CHECK(cudaMemcpy(C_outputFromGpu, C_gpu, sizeof(DATA_TYPE) * NI * NJ, cudaMemcpyDeviceToHost));

    cudaFree(A_gpu);
    cudaFree(B_gpu);
    cudaFree(C_gpu);
}

int main(int argc, char* argv[])
{
    double t_start, t_end;

    DATA_TYPE* A = host_alloc<DATA_TYPE>((size_t)NI * NK);
    DATA_TYPE* B = host_alloc<DATA_TYPE>((size_t)NK * NJ);
    DATA_TYPE* C = host_alloc<DATA_TYPE>((size_t)NI * NJ);
    DATA_TYPE* C_outputFromGpu = host_alloc<DATA_TYPE>((size_t)NI * NJ);

    init(A, B, C);

    CUDA_CHECK(cudaSetDevice(GPU_DEVICE));
    print_device();
    gemmCuda(A, B, C, C_outputFromGpu);

    t_start = wall_time();
    gemm(A, B, C);
    t_end = wall_time();
    fprintf(stdout, "CPU Runtime: %0.6lfs\n", t_end - t_start);

    int fail = compare_arrays("C", C, C_outputFromGpu, (size_t)NI * NJ, PERCENT_DIFF_ERROR_THRESHOLD);

    free(A);
    free(B);
    free(C);
    free(C_outputFromGpu);

    return fail ? EXIT_FAILURE : EXIT_SUCCESS;
}

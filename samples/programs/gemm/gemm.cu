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

void gemm_host(const DATA_TYPE* A, const DATA_TYPE* B, DATA_TYPE* C)
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

void fill_inputs(DATA_TYPE* A, DATA_TYPE* B, DATA_TYPE* C)
{
    init_random(A, (size_t)NI * NK, 1u);
    init_random(B, (size_t)NK * NJ, 2u);
    init_random(C, (size_t)NI * NJ, 3u);
}

__global__ void gemm_kernel(DATA_TYPE alpha, DATA_TYPE beta, DATA_TYPE* a, DATA_TYPE* b, DATA_TYPE* c)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;

    if ((row < NI) && (col < NJ)) {
        int p;
        c[row * NJ + col] *= beta;
        for (p = 0; p < NK; p++) {
            c[row * NJ + col] += alpha * a[row * NK + p] * b[p * NJ + col];
        }
    }
}

void gemm_on_device(const DATA_TYPE* A, const DATA_TYPE* B, const DATA_TYPE* C, DATA_TYPE* C_from_gpu)
{
    double t_start, t_end;

    DATA_TYPE *d_A, *d_B, *d_C;

    CUDA_CHECK(cudaMalloc((void**)&d_A, sizeof(DATA_TYPE) * NI * NK));
    CUDA_CHECK(cudaMalloc((void**)&d_B, sizeof(DATA_TYPE) * NK * NJ));
    CUDA_CHECK(cudaMalloc((void**)&d_C, sizeof(DATA_TYPE) * NI * NJ));

    CUDA_CHECK(cudaMemcpy(d_A, A, sizeof(DATA_TYPE) * NI * NK, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_B, B, sizeof(DATA_TYPE) * NK * NJ, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_C, C, sizeof(DATA_TYPE) * NI * NJ, cudaMemcpyHostToDevice));

    dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
    dim3 grid((size_t)(ceil(((float)NJ) / ((float)block.x))), (size_t)(ceil(((float)NI) / ((float)block.y))));

    t_start = wall_time();
    gemm_kernel<<<grid, block>>>(ALPHA, BETA, d_A, d_B, d_C);
    CUDA_CHECK_KERNEL();
    t_end = wall_time();
    printf("GPU time: %.6f s\n", t_end - t_start);

    CUDA_CHECK(cudaMemcpy(C_from_gpu, d_C, sizeof(DATA_TYPE) * NI * NJ, cudaMemcpyDeviceToHost));

    cudaFree(d_A);
    cudaFree(d_B);
    cudaFree(d_C);
}

int main(int argc, char* argv[])
{
    double t_start, t_end;

    DATA_TYPE* A = host_alloc<DATA_TYPE>((size_t)NI * NK);
    DATA_TYPE* B = host_alloc<DATA_TYPE>((size_t)NK * NJ);
    DATA_TYPE* C = host_alloc<DATA_TYPE>((size_t)NI * NJ);
    DATA_TYPE* C_from_gpu = host_alloc<DATA_TYPE>((size_t)NI * NJ);

    fill_inputs(A, B, C);

    CUDA_CHECK(cudaSetDevice(GPU_DEVICE));
    print_device();
    gemm_on_device(A, B, C, C_from_gpu);

    t_start = wall_time();
    gemm_host(A, B, C);
    t_end = wall_time();
    printf("CPU time: %.6f s\n", t_end - t_start);

    int fail = compare_arrays("C", C, C_from_gpu, (size_t)NI * NJ, PERCENT_DIFF_ERROR_THRESHOLD);

    free(A);
    free(B);
    free(C);
    free(C_from_gpu);

    return fail ? EXIT_FAILURE : EXIT_SUCCESS;
}

/**
 * twomm.cu: D = alpha * A * B * C + beta * D, as two kernels:
 * tmp = alpha * A * B (mm2_kernel1), then D = tmp * C + beta * D (mm2_kernel2).
 *
 * One thread per output element, summing in a register.
 */
#include <cuda.h>
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <math.h>

#include <util.h>

#include "twomm.cuh"

#define GPU_DEVICE 0

void init_array(DATA_TYPE* alpha, DATA_TYPE* beta, DATA_TYPE* A, DATA_TYPE* B, DATA_TYPE* C, DATA_TYPE* D)
{
    *alpha = 32412;
    *beta = 2123;
    init_random(A, (size_t)NI * NK, 11u);
    init_random(B, (size_t)NK * NJ, 12u);
    init_random(C, (size_t)NJ * NL, 13u);
    init_random(D, (size_t)NI * NL, 14u);
}

void mm2_cpu(DATA_TYPE alpha, DATA_TYPE beta, DATA_TYPE* tmp, DATA_TYPE* A, DATA_TYPE* B, DATA_TYPE* C,
             DATA_TYPE* D)
{
    int i, j, k;

    for (i = 0; i < NI; i++) {
        for (j = 0; j < NJ; j++) {
            tmp[i * NJ + j] = 0;
            for (k = 0; k < NK; ++k) {
                tmp[i * NJ + j] += alpha * A[i * NK + k] * B[k * NJ + j];
            }
        }
    }
    for (i = 0; i < NI; i++) {
        for (j = 0; j < NL; j++) {
            D[i * NL + j] *= beta;
            for (k = 0; k < NJ; ++k) {
                D[i * NL + j] += tmp[i * NJ + k] * C[k * NL + j];
            }
        }
    }
}

__global__ void mm2_kernel1(DATA_TYPE alpha, DATA_TYPE* tmp, DATA_TYPE* A, DATA_TYPE* B)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;

    if ((i < NI) && (j < NJ)) {
        DATA_TYPE sum = 0;
        for (int k = 0; k < NK; k++) {
            sum += alpha * A[i * NK + k] * B[k * NJ + j];
        }
        tmp[i * NJ + j] = sum;
    }
}

__global__ void mm2_kernel2(DATA_TYPE beta, DATA_TYPE* tmp, DATA_TYPE* C, DATA_TYPE* D)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;

    if ((i < NI) && (j < NL)) {
        DATA_TYPE sum = D[i * NL + j] * beta;
        for (int k = 0; k < NJ; k++) {
            sum += tmp[i * NJ + k] * C[k * NL + j];
        }
        D[i * NL + j] = sum;
    }
}

void mm2Cuda(DATA_TYPE alpha, DATA_TYPE beta, DATA_TYPE* A, DATA_TYPE* B, DATA_TYPE* C, DATA_TYPE* D,
             DATA_TYPE* D_outputFromGpu)
{
    double t_start, t_end;

    DATA_TYPE *tmp_gpu, *A_gpu, *B_gpu, *C_gpu, *D_gpu;

    CUDA_CHECK(cudaMalloc((void**)&tmp_gpu, sizeof(DATA_TYPE) * NI * NJ));
    CUDA_CHECK(cudaMalloc((void**)&A_gpu, sizeof(DATA_TYPE) * NI * NK));
    CUDA_CHECK(cudaMalloc((void**)&B_gpu, sizeof(DATA_TYPE) * NK * NJ));
    CUDA_CHECK(cudaMalloc((void**)&C_gpu, sizeof(DATA_TYPE) * NJ * NL));
    CUDA_CHECK(cudaMalloc((void**)&D_gpu, sizeof(DATA_TYPE) * NI * NL));

    CUDA_CHECK(cudaMemcpy(A_gpu, A, sizeof(DATA_TYPE) * NI * NK, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(B_gpu, B, sizeof(DATA_TYPE) * NK * NJ, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(C_gpu, C, sizeof(DATA_TYPE) * NJ * NL, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(D_gpu, D, sizeof(DATA_TYPE) * NI * NL, cudaMemcpyHostToDevice));

    dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
    dim3 grid1((size_t)ceil(((float)NJ) / ((float)block.x)), (size_t)ceil(((float)NI) / ((float)block.y)));
    dim3 grid2((size_t)ceil(((float)NL) / ((float)block.x)), (size_t)ceil(((float)NI) / ((float)block.y)));

    t_start = wall_time();
    mm2_kernel1<<<grid1, block>>>(alpha, tmp_gpu, A_gpu, B_gpu);
    CUDA_CHECK_KERNEL();
    mm2_kernel2<<<grid2, block>>>(beta, tmp_gpu, C_gpu, D_gpu);
    CUDA_CHECK_KERNEL();
    t_end = wall_time();
    fprintf(stdout, "GPU Runtime: %0.6lfs\n", t_end - t_start);

    CUDA_CHECK(cudaMemcpy(D_outputFromGpu, D_gpu, sizeof(DATA_TYPE) * NI * NL, cudaMemcpyDeviceToHost));

    cudaFree(tmp_gpu);
    cudaFree(A_gpu);
    cudaFree(B_gpu);
    cudaFree(C_gpu);
    cudaFree(D_gpu);
}

int main(int argc, char** argv)
{
    double t_start, t_end;
    DATA_TYPE alpha, beta;

    DATA_TYPE* tmp = host_alloc<DATA_TYPE>((size_t)NI * NJ);
    DATA_TYPE* A = host_alloc<DATA_TYPE>((size_t)NI * NK);
    DATA_TYPE* B = host_alloc<DATA_TYPE>((size_t)NK * NJ);
    DATA_TYPE* C = host_alloc<DATA_TYPE>((size_t)NJ * NL);
    DATA_TYPE* D = host_alloc<DATA_TYPE>((size_t)NI * NL);
    DATA_TYPE* D_outputFromGpu = host_alloc<DATA_TYPE>((size_t)NI * NL);

    init_array(&alpha, &beta, A, B, C, D);

    CUDA_CHECK(cudaSetDevice(GPU_DEVICE));
    print_device();
    mm2Cuda(alpha, beta, A, B, C, D, D_outputFromGpu);

    t_start = wall_time();
    mm2_cpu(alpha, beta, tmp, A, B, C, D);
    t_end = wall_time();
    fprintf(stdout, "CPU Runtime: %0.6lfs\n", t_end - t_start);

    int fail = compare_arrays("D", D, D_outputFromGpu, (size_t)NI * NL, PERCENT_DIFF_ERROR_THRESHOLD);

    free(tmp);
    free(A);
    free(B);
    free(C);
    free(D);
    free(D_outputFromGpu);

    return fail ? EXIT_FAILURE : EXIT_SUCCESS;
}

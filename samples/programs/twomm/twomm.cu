/**
 * twomm.cu: D = alpha * A * B * C + beta * D, as two kernels:
 * tmp = alpha * A * B (mm2_tmp_kernel), then D = tmp * C + beta * D (mm2_out_kernel).
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

void fill_inputs(DATA_TYPE* alpha, DATA_TYPE* beta, DATA_TYPE* A, DATA_TYPE* B, DATA_TYPE* C, DATA_TYPE* D)
{
    *alpha = 1.5f;
    *beta = 0.75f;
    init_random(A, (size_t)NI * NK, 11u);
    init_random(B, (size_t)NK * NJ, 12u);
    init_random(C, (size_t)NJ * NL, 13u);
    init_random(D, (size_t)NI * NL, 14u);
}

/* The two products on the host, each output summed in a local in the kernels' order. */
void mm2_host(DATA_TYPE alpha, DATA_TYPE beta, DATA_TYPE* tmp, const DATA_TYPE* A, const DATA_TYPE* B,
              const DATA_TYPE* C, DATA_TYPE* D)
{
    for (int r = 0; r < NI; r++) {
        for (int c = 0; c < NJ; c++) {
            DATA_TYPE acc = 0;
            for (int p = 0; p < NK; p++) {
                acc += alpha * A[r * NK + p] * B[p * NJ + c];
            }
            tmp[r * NJ + c] = acc;
        }
        for (int c = 0; c < NL; c++) {
            DATA_TYPE acc = D[r * NL + c] * beta;
            for (int p = 0; p < NJ; p++) {
                acc += tmp[r * NJ + p] * C[p * NL + c];
            }
            D[r * NL + c] = acc;
        }
    }
}

__global__ void mm2_tmp_kernel(DATA_TYPE alpha, DATA_TYPE* tmp, DATA_TYPE* A, DATA_TYPE* B)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;

    if ((r < NI) && (c < NJ)) {
        DATA_TYPE acc = 0;
        for (int p = 0; p < NK; p++) {
            acc += alpha * A[r * NK + p] * B[p * NJ + c];
        }
        tmp[r * NJ + c] = acc;
    }
}

__global__ void mm2_out_kernel(DATA_TYPE beta, DATA_TYPE* tmp, DATA_TYPE* C, DATA_TYPE* D)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;

    if ((r < NI) && (c < NL)) {
        DATA_TYPE acc = D[r * NL + c] * beta;
        for (int p = 0; p < NJ; p++) {
            acc += tmp[r * NJ + p] * C[p * NL + c];
        }
        D[r * NL + c] = acc;
    }
}

void mm2_on_device(DATA_TYPE alpha, DATA_TYPE beta, DATA_TYPE* A, DATA_TYPE* B, DATA_TYPE* C, DATA_TYPE* D,
             DATA_TYPE* D_from_gpu)
{
    double t_start, t_end;

    DATA_TYPE *d_tmp, *d_A, *d_B, *d_C, *d_D;

    CUDA_CHECK(cudaMalloc((void**)&d_tmp, sizeof(DATA_TYPE) * NI * NJ));
    CUDA_CHECK(cudaMalloc((void**)&d_A, sizeof(DATA_TYPE) * NI * NK));
    CUDA_CHECK(cudaMalloc((void**)&d_B, sizeof(DATA_TYPE) * NK * NJ));
    CUDA_CHECK(cudaMalloc((void**)&d_C, sizeof(DATA_TYPE) * NJ * NL));
    CUDA_CHECK(cudaMalloc((void**)&d_D, sizeof(DATA_TYPE) * NI * NL));

    CUDA_CHECK(cudaMemcpy(d_A, A, sizeof(DATA_TYPE) * NI * NK, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_B, B, sizeof(DATA_TYPE) * NK * NJ, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_C, C, sizeof(DATA_TYPE) * NJ * NL, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_D, D, sizeof(DATA_TYPE) * NI * NL, cudaMemcpyHostToDevice));

    dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
    dim3 grid1((size_t)ceil(((float)NJ) / ((float)block.x)), (size_t)ceil(((float)NI) / ((float)block.y)));
    dim3 grid2((size_t)ceil(((float)NL) / ((float)block.x)), (size_t)ceil(((float)NI) / ((float)block.y)));

    t_start = wall_time();
    mm2_tmp_kernel<<<grid1, block>>>(alpha, d_tmp, d_A, d_B);
    CUDA_CHECK_KERNEL();
    mm2_out_kernel<<<grid2, block>>>(beta, d_tmp, d_C, d_D);
    CUDA_CHECK_KERNEL();
    t_end = wall_time();
    printf("GPU time: %.6f s\n", t_end - t_start);

    CUDA_CHECK(cudaMemcpy(D_from_gpu, d_D, sizeof(DATA_TYPE) * NI * NL, cudaMemcpyDeviceToHost));

    cudaFree(d_tmp);
    cudaFree(d_A);
    cudaFree(d_B);
    cudaFree(d_C);
    cudaFree(d_D);
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
    DATA_TYPE* D_from_gpu = host_alloc<DATA_TYPE>((size_t)NI * NL);

    fill_inputs(&alpha, &beta, A, B, C, D);

    CUDA_CHECK(cudaSetDevice(GPU_DEVICE));
    print_device();
    mm2_on_device(alpha, beta, A, B, C, D, D_from_gpu);

    t_start = wall_time();
    mm2_host(alpha, beta, tmp, A, B, C, D);
    t_end = wall_time();
    printf("CPU time: %.6f s\n", t_end - t_start);

    int fail = compare_arrays("D", D, D_from_gpu, (size_t)NI * NL, PERCENT_DIFF_ERROR_THRESHOLD);

    free(tmp);
    free(A);
    free(B);
    free(C);
    free(D);
    free(D_from_gpu);

    return fail ? EXIT_FAILURE : EXIT_SUCCESS;
}

/**
 * mvt.cu: matrix-vector product and transpose.
 *
 * x1 = x1 + A * y_1    (mvt_kernel1, one thread per row of A)
 * x2 = x2 + A^T * y_2  (mvt_kernel2, one thread per column of A)
 */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>

#include <util.h>

#include "mvt.cuh"

void init_array(DATA_TYPE* A, DATA_TYPE* x1, DATA_TYPE* x2, DATA_TYPE* y1, DATA_TYPE* y2, int n)
{
    unsigned int seed = 7u;
    for (int i = 0; i < n; i++) {
        x1[i] = rand_unit(&seed);
        x2[i] = rand_unit(&seed);
        y1[i] = rand_unit(&seed);
        y2[i] = rand_unit(&seed);
    }
    init_random(A, (size_t)n * n, 11u);
}

void runMvt(DATA_TYPE* a, DATA_TYPE* x1, DATA_TYPE* x2, DATA_TYPE* y1, DATA_TYPE* y2, int n)
{
    int i, j;

    for (i = 0; i < n; i++) {
        for (j = 0; j < n; j++) {
            x1[i] = x1[i] + a[(size_t)i * n + j] * y1[j];
        }
    }

    // Row by row through A; each x2[i] still sums over j in increasing order.
    for (j = 0; j < n; j++) {
        for (i = 0; i < n; i++) {
            x2[i] = x2[i] + a[(size_t)j * n + i] * y2[j];
        }
    }
}

__global__ void mvt_kernel1(DATA_TYPE* a, DATA_TYPE* x1, DATA_TYPE* y_1, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;

    for (int j = 0; j < n; ++j) {
        x1[i] += a[i * n + j] * y_1[j];
    }
}

__global__ void mvt_kernel2(DATA_TYPE* a, DATA_TYPE* x2, DATA_TYPE* y_2, int n)
{
    int i = blockDim.x * blockIdx.x + threadIdx.x;

    if (i < n) {
        DATA_TYPE sum = x2[i];
        int j;
        for (j = 0; j <= n - 1; j++) {
            int idx = j * n + i;
            sum += a[idx] * y_2[j];
        }
        x2[i] = sum;
    }
}

void mvtCuda(DATA_TYPE* a, DATA_TYPE* x1, DATA_TYPE* x2, DATA_TYPE* y_1, DATA_TYPE* y_2,
             DATA_TYPE* x1_outputFromGpu, DATA_TYPE* x2_outputFromGpu)
{
    double t_start, t_mid, t_end;
    const size_t bytes_a = sizeof(DATA_TYPE) * N * N;
    const size_t bytes_v = sizeof(DATA_TYPE) * N;

    DATA_TYPE* a_gpu;
    DATA_TYPE* x1_gpu;
    DATA_TYPE* x2_gpu;
    DATA_TYPE* y_1_gpu;
    DATA_TYPE* y_2_gpu;

    CUDA_CHECK(cudaMalloc((void**)&a_gpu, bytes_a));
    CUDA_CHECK(cudaMalloc((void**)&x1_gpu, bytes_v));
    CUDA_CHECK(cudaMalloc((void**)&x2_gpu, bytes_v));
    CUDA_CHECK(cudaMalloc((void**)&y_1_gpu, bytes_v));
    CUDA_CHECK(cudaMalloc((void**)&y_2_gpu, bytes_v));
    CUDA_CHECK(cudaMemcpy(a_gpu, a, bytes_a, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(x1_gpu, x1, bytes_v, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(x2_gpu, x2, bytes_v, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(y_1_gpu, y_1, bytes_v, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(y_2_gpu, y_2, bytes_v, cudaMemcpyHostToDevice));

    dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
    dim3 grid((size_t)ceil((float)N / ((float)DIM_THREAD_BLOCK_X)), 1);

    t_start = wall_time();
    mvt_kernel1<<<grid, block>>>(a_gpu, x1_gpu, y_1_gpu, N);
    CUDA_CHECK_KERNEL();
    t_mid = wall_time();
    mvt_kernel2<<<grid, block>>>(a_gpu, x2_gpu, y_2_gpu, N);
    CUDA_CHECK_KERNEL();
    t_end = wall_time();
    fprintf(stdout, "GPU Runtime: %0.6lfs (mvt_kernel1 %0.6lfs, mvt_kernel2 %0.6lfs)\n",
            t_end - t_start, t_mid - t_start, t_end - t_mid);

    CUDA_CHECK(cudaMemcpy(x1_outputFromGpu, x1_gpu, bytes_v, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(x2_outputFromGpu, x2_gpu, bytes_v, cudaMemcpyDeviceToHost));

    CUDA_CHECK(cudaFree(a_gpu));
    CUDA_CHECK(cudaFree(x1_gpu));
    CUDA_CHECK(cudaFree(x2_gpu));
    CUDA_CHECK(cudaFree(y_1_gpu));
    CUDA_CHECK(cudaFree(y_2_gpu));
}

int main()
{
    double t_start, t_end;

    DATA_TYPE* a = (DATA_TYPE*)malloc((size_t)N * N * sizeof(DATA_TYPE));
    DATA_TYPE* x1 = (DATA_TYPE*)malloc(N * sizeof(DATA_TYPE));
    DATA_TYPE* x2 = (DATA_TYPE*)malloc(N * sizeof(DATA_TYPE));
    DATA_TYPE* x1_outputFromGpu = (DATA_TYPE*)malloc(N * sizeof(DATA_TYPE));
    DATA_TYPE* x2_outputFromGpu = (DATA_TYPE*)malloc(N * sizeof(DATA_TYPE));
    DATA_TYPE* y_1 = (DATA_TYPE*)malloc(N * sizeof(DATA_TYPE));
    DATA_TYPE* y_2 = (DATA_TYPE*)malloc(N * sizeof(DATA_TYPE));
    if (!a || !x1 || !x2 || !x1_outputFromGpu || !x2_outputFromGpu || !y_1 || !y_2) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }

    init_array(a, x1, x2, y_1, y_2, N);

    print_device();
    mvtCuda(a, x1, x2, y_1, y_2, x1_outputFromGpu, x2_outputFromGpu);

    t_start = wall_time();
    runMvt(a, x1, x2, y_1, y_2, N);
    t_end = wall_time();
    fprintf(stdout, "CPU Runtime: %0.6lfs\n", t_end - t_start);

    int fail = compare_arrays("x1", x1, x1_outputFromGpu, N, PERCENT_DIFF_ERROR_THRESHOLD);
    fail += compare_arrays("x2", x2, x2_outputFromGpu, N, PERCENT_DIFF_ERROR_THRESHOLD);

    free(a);
    free(x1);
    free(x2);
    free(x1_outputFromGpu);
    free(x2_outputFromGpu);
    free(y_1);
    free(y_2);

    return fail != 0;
}

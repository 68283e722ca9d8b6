/**
 * mvt.cu: matrix-vector product and transpose.
 *
 * x1 = x1 + A * y1    (mvt_rows_kernel, one thread per row of A)
 * x2 = x2 + A^T * y2  (mvt_cols_kernel, one thread per column of A)
 */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>

#include <util.h>

#include "mvt.cuh"

void fill_inputs(DATA_TYPE* A, DATA_TYPE* x1, DATA_TYPE* x2, DATA_TYPE* y1, DATA_TYPE* y2, int n)
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

void mvt_host(DATA_TYPE* a, DATA_TYPE* x1, DATA_TYPE* x2, DATA_TYPE* y1, DATA_TYPE* y2, int n)
{
    for (int i = 0; i < n; i++) {
        const DATA_TYPE* row = a + (size_t)i * n;
        for (int j = 0; j < n; j++) {
            x1[i] += row[j] * y1[j];
        }
    }

    // A^T y2 row by row through A; each x2[c] still sums over the rows in increasing order.
    for (int r = 0; r < n; r++) {
        const DATA_TYPE* row = a + (size_t)r * n;
        for (int c = 0; c < n; c++) {
            x2[c] += row[c] * y2[r];
        }
    }
}

// x1 += A y1: a thread per row of A, summing straight into x1 in global memory.
__global__ void mvt_rows_kernel(DATA_TYPE* a, DATA_TYPE* x1, DATA_TYPE* y1, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;

    for (int j = 0; j < n; ++j) {
        x1[i] += a[i * n + j] * y1[j];
    }
}

// x2 += A^T y2: a thread per column of A, summing in a register.
__global__ void mvt_cols_kernel(DATA_TYPE* a, DATA_TYPE* x2, DATA_TYPE* y2, int n)
{
    int i = blockDim.x * blockIdx.x + threadIdx.x;

    if (i < n) {
        DATA_TYPE acc = x2[i];
        int j;
        for (j = 0; j <= n - 1; j++) {
            int idx = j * n + i;
            acc += a[idx] * y2[j];
        }
        x2[i] = acc;
    }
}

void mvt_on_device(DATA_TYPE* a, DATA_TYPE* x1, DATA_TYPE* x2, DATA_TYPE* y1, DATA_TYPE* y2,
             DATA_TYPE* x1_from_gpu, DATA_TYPE* x2_from_gpu)
{
    double t_start, t_mid, t_end;
    const size_t bytes_a = sizeof(DATA_TYPE) * N * N;
    const size_t bytes_v = sizeof(DATA_TYPE) * N;

    DATA_TYPE* d_a;
    DATA_TYPE* d_x1;
    DATA_TYPE* d_x2;
    DATA_TYPE* d_y1;
    DATA_TYPE* d_y2;

    CUDA_CHECK(cudaMalloc((void**)&d_a, bytes_a));
    CUDA_CHECK(cudaMalloc((void**)&d_x1, bytes_v));
    CUDA_CHECK(cudaMalloc((void**)&d_x2, bytes_v));
    CUDA_CHECK(cudaMalloc((void**)&d_y1, bytes_v));
    CUDA_CHECK(cudaMalloc((void**)&d_y2, bytes_v));
    CUDA_CHECK(cudaMemcpy(d_a, a, bytes_a, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_x1, x1, bytes_v, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_x2, x2, bytes_v, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_y1, y1, bytes_v, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_y2, y2, bytes_v, cudaMemcpyHostToDevice));

    dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
    dim3 grid((size_t)ceil((float)N / ((float)DIM_THREAD_BLOCK_X)), 1);

    t_start = wall_time();
    mvt_rows_kernel<<<grid, block>>>(d_a, d_x1, d_y1, N);
    CUDA_CHECK_KERNEL();
    t_mid = wall_time();
    mvt_cols_kernel<<<grid, block>>>(d_a, d_x2, d_y2, N);
    CUDA_CHECK_KERNEL();
    t_end = wall_time();
    printf("GPU time: %.6f s (rows %.6f s, columns %.6f s)\n", t_end - t_start, t_mid - t_start, t_end - t_mid);

    CUDA_CHECK(cudaMemcpy(x1_from_gpu, d_x1, bytes_v, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(x2_from_gpu, d_x2, bytes_v, cudaMemcpyDeviceToHost));

    CUDA_CHECK(cudaFree(d_a));
    CUDA_CHECK(cudaFree(d_x1));
    CUDA_CHECK(cudaFree(d_x2));
    CUDA_CHECK(cudaFree(d_y1));
    CUDA_CHECK(cudaFree(d_y2));
}

int main()
{
    double t_start, t_end;

    DATA_TYPE* a = (DATA_TYPE*)malloc((size_t)N * N * sizeof(DATA_TYPE));
    DATA_TYPE* x1 = (DATA_TYPE*)malloc(N * sizeof(DATA_TYPE));
    DATA_TYPE* x2 = (DATA_TYPE*)malloc(N * sizeof(DATA_TYPE));
    DATA_TYPE* x1_from_gpu = (DATA_TYPE*)malloc(N * sizeof(DATA_TYPE));
    DATA_TYPE* x2_from_gpu = (DATA_TYPE*)malloc(N * sizeof(DATA_TYPE));
    DATA_TYPE* y1 = (DATA_TYPE*)malloc(N * sizeof(DATA_TYPE));
    DATA_TYPE* y2 = (DATA_TYPE*)malloc(N * sizeof(DATA_TYPE));
    if (!a || !x1 || !x2 || !x1_from_gpu || !x2_from_gpu || !y1 || !y2) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }

    fill_inputs(a, x1, x2, y1, y2, N);

    print_device();
    mvt_on_device(a, x1, x2, y1, y2, x1_from_gpu, x2_from_gpu);

    t_start = wall_time();
    mvt_host(a, x1, x2, y1, y2, N);
    t_end = wall_time();
    printf("CPU time: %.6f s\n", t_end - t_start);

    int fail = compare_arrays("x1", x1, x1_from_gpu, N, PERCENT_DIFF_ERROR_THRESHOLD);
    fail += compare_arrays("x2", x2, x2_from_gpu, N, PERCENT_DIFF_ERROR_THRESHOLD);

    free(a);
    free(x1);
    free(x2);
    free(x1_from_gpu);
    free(x2_from_gpu);
    free(y1);
    free(y2);

    return fail != 0;
}

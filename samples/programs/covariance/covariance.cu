/**
 * covariance.cu: covariance matrix of M variables over N observations.
 *
 * Three kernels launched in sequence:
 *   column_mean_kernel: mean[j] = sum_i data[i][j] / N
 *   center_kernel:      data[i][j] -= mean[j]
 *   cov_pairs_kernel:   symmat[j1][j2] = sum_i data[i][j1] * data[i][j2] / (N - 1)
 */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>

#include <util.h>

#include "covariance.cuh"

/* Observations with a shared per-row factor, so that every pair of columns covaries. */
void fill_inputs(DATA_TYPE* data)
{
    unsigned int seed = 42u;
    DATA_TYPE* weight = (DATA_TYPE*)malloc(M * sizeof(DATA_TYPE));
    for (int j = 0; j < M; j++) {
        weight[j] = 0.5f + rand_unit(&seed);
    }
    for (int i = 0; i < N; i++) {
        DATA_TYPE u = rand_unit(&seed);
        for (int j = 0; j < M; j++) {
            data[i * M + j] = u * weight[j] + rand_unit(&seed);
        }
    }
    free(weight);
}

void covariance_host(DATA_TYPE* data, DATA_TYPE* symmat, DATA_TYPE* mean)
{
    /* Column sums, row by row, then divided into means. */
    for (int j = 0; j < M; j++) {
        mean[j] = 0.0;
    }
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < M; j++) {
            mean[j] += data[i * M + j];
        }
    }
    for (int j = 0; j < M; j++) {
        mean[j] /= FLOAT_N;
    }

    /* Each observation minus the means, into a transposed copy: a variable's N values contiguous. */
    DATA_TYPE* vars = (DATA_TYPE*)malloc((size_t)M * N * sizeof(DATA_TYPE));
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < M; j++) {
            data[i * M + j] -= mean[j];
            vars[(size_t)j * N + i] = data[i * M + j];
        }
    }

    /* One dot product per pair of variables, in double, written to both triangles. */
    for (int a = 0; a < M; a++) {
        const DATA_TYPE* va = vars + (size_t)a * N;
        for (int b = a; b < M; b++) {
            const DATA_TYPE* vb = vars + (size_t)b * N;
            double dot = 0.0;
            for (int i = 0; i < N; i++) {
                dot += (double)va[i] * vb[i];
            }
            symmat[a * M + b] = (DATA_TYPE)(dot / (FLOAT_N - 1));
            symmat[b * M + a] = symmat[a * M + b];
        }
    }
    free(vars);
}

__global__ void column_mean_kernel(DATA_TYPE* mean, DATA_TYPE* data)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;

    if (col < BOUND_M) {
        mean[col] = 0.0;
        for (int row = 0; row < BOUND_N; row++) {
            mean[col] += data[row * M + col];
        }
        mean[col] /= (DATA_TYPE)FLOAT_N;
    }
}

__global__ void center_kernel(DATA_TYPE* mean, DATA_TYPE* data)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;

    if ((i <= BOUND_N - 1) && (j <= BOUND_M - 1)) {
        data[i * M + j] -= mean[j];
    }
}

__global__ void cov_pairs_kernel(DATA_TYPE* symmat, DATA_TYPE* data)
{
    int j2 = blockIdx.x * blockDim.x + threadIdx.x;
    int j1 = blockIdx.y * blockDim.y + threadIdx.y;

    if (j1 >= BOUND_M || j2 >= BOUND_M) {
        return;
    }

    DATA_TYPE sum = 0;
    for (int i = 0; i < BOUND_N; ++i) {
        sum += data[i * M + j1] * data[i * M + j2];
    }
    symmat[j1 * M + j2] = sum / (FLOAT_N - 1);
}

void covariance_on_device(DATA_TYPE* data, DATA_TYPE* symmat_from_gpu)
{
    double t_start, t_end;

    DATA_TYPE* d_data;
    DATA_TYPE* d_mean;
    DATA_TYPE* d_symmat;

    CUDA_CHECK(cudaMalloc((void**)&d_data, sizeof(DATA_TYPE) * M * N));
    CUDA_CHECK(cudaMalloc((void**)&d_symmat, sizeof(DATA_TYPE) * M * M));
    CUDA_CHECK(cudaMalloc((void**)&d_mean, sizeof(DATA_TYPE) * M));
    CUDA_CHECK(cudaMemcpy(d_data, data, sizeof(DATA_TYPE) * M * N, cudaMemcpyHostToDevice));

    dim3 block1(DIM_THREAD_BLOCK_KERNEL_1_X, DIM_THREAD_BLOCK_KERNEL_1_Y);
    dim3 grid1((M + DIM_THREAD_BLOCK_KERNEL_1_X - 1) / DIM_THREAD_BLOCK_KERNEL_1_X, 1);

    /* x runs over the rows here, y over the columns. */
    dim3 block2(DIM_THREAD_BLOCK_KERNEL_2_X, DIM_THREAD_BLOCK_KERNEL_2_Y);
    dim3 grid2((size_t)ceil(((float)N) / ((float)DIM_THREAD_BLOCK_KERNEL_2_X)),
               (size_t)ceil(((float)M) / ((float)DIM_THREAD_BLOCK_KERNEL_2_Y)));

    dim3 block3(DIM_THREAD_BLOCK_KERNEL_3_X, DIM_THREAD_BLOCK_KERNEL_3_Y);
    dim3 grid3((size_t)ceil(((float)M) / ((float)block3.x)), (size_t)ceil(((float)M) / ((float)block3.y)));

    t_start = wall_time();
    column_mean_kernel<<<grid1, block1>>>(d_mean, d_data);
    CUDA_CHECK_KERNEL();
    center_kernel<<<grid2, block2>>>(d_mean, d_data);
    CUDA_CHECK_KERNEL();
    cov_pairs_kernel<<<grid3, block3>>>(d_symmat, d_data);
    CUDA_CHECK_KERNEL();
    t_end = wall_time();
    printf("GPU time: %.6f s\n", t_end - t_start);

    CUDA_CHECK(cudaMemcpy(symmat_from_gpu, d_symmat, sizeof(DATA_TYPE) * M * M, cudaMemcpyDeviceToHost));

    cudaFree(d_data);
    cudaFree(d_symmat);
    cudaFree(d_mean);
}

int main()
{
    double t_start, t_end;

    DATA_TYPE* data = host_alloc<DATA_TYPE>((size_t)M * N);
    DATA_TYPE* symmat = host_alloc<DATA_TYPE>((size_t)M * M);
    DATA_TYPE* mean = host_alloc<DATA_TYPE>(M);
    DATA_TYPE* symmat_from_gpu = host_alloc<DATA_TYPE>((size_t)M * M);

    fill_inputs(data);

    print_device();
    covariance_on_device(data, symmat_from_gpu);

    t_start = wall_time();
    covariance_host(data, symmat, mean);
    t_end = wall_time();
    printf("CPU time: %.6f s\n", t_end - t_start);

    int fail = compare_arrays("symmat", symmat, symmat_from_gpu, (size_t)M * M, PERCENT_DIFF_ERROR_THRESHOLD);

    free(data);
    free(symmat);
    free(mean);
    free(symmat_from_gpu);

    return fail > 0 ? 1 : 0;
}

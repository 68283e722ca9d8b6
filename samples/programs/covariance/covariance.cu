/**
 * covariance.cu: covariance matrix of M variables over N observations.
 *
 * Three kernels launched in sequence:
 *   mean_kernel:   mean[j] = sum_i data[i][j] / N
 *   center_kernel: data[i][j] -= mean[j]
 *   covar_kernel:  symmat[j1][j2] = sum_i data[i][j1] * data[i][j2] / (N - 1)
 */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>

#include <util.h>

#include "covariance.cuh"

/* Observations with a shared per-row factor, so that every pair of columns covaries. */
void init_arrays(DATA_TYPE* data)
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

void covariance(DATA_TYPE* data, DATA_TYPE* symmat, DATA_TYPE* mean)
{
    int i, j, j1, j2;

    /* Determine mean of column vectors of input data matrix */
    for (j = 0; j < M; j++) {
        mean[j] = 0.0;
    }
    for (i = 0; i < N; i++) {
        for (j = 0; j < M; j++) {
            mean[j] += data[i * M + j];
        }
    }
    for (j = 0; j < M; j++) {
        mean[j] /= FLOAT_N;
    }

    /* Center the column vectors. */
    for (i = 0; i < N; i++) {
        for (j = 0; j < M; j++) {
            data[i * M + j] -= mean[j];
        }
    }

    /* Column-major copy, so that each dot product below reads contiguous memory. */
    DATA_TYPE* columns = (DATA_TYPE*)malloc((size_t)M * N * sizeof(DATA_TYPE));
    for (i = 0; i < N; i++) {
        for (j = 0; j < M; j++) {
            columns[(size_t)j * N + i] = data[i * M + j];
        }
    }

    /* Calculate the m * m covariance matrix (upper triangle, mirrored). */
    for (j1 = 0; j1 < M; j1++) {
        const DATA_TYPE* c1 = columns + (size_t)j1 * N;
        for (j2 = j1; j2 < M; j2++) {
            const DATA_TYPE* c2 = columns + (size_t)j2 * N;
            double sum = 0.0;
            for (i = 0; i < N; i++) {
                sum += (double)c1[i] * c2[i];
            }
            symmat[j1 * M + j2] = (DATA_TYPE)(sum / (FLOAT_N - 1));
            symmat[j2 * M + j1] = symmat[j1 * M + j2];
        }
    }
    free(columns);
}

__global__ void mean_kernel(DATA_TYPE* mean, DATA_TYPE* data)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;

    if (j < BOUND_M) {
        mean[j] = 0.0;

        int i;
        for (i = 0; i < BOUND_N; i++) {
            mean[j] += data[i * M + j];
        }
        mean[j] /= (DATA_TYPE)FLOAT_N;
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

__global__ void covar_kernel(DATA_TYPE* symmat, DATA_TYPE* data)
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

void covarianceCuda(DATA_TYPE* data, DATA_TYPE* symmat_outputFromGpu)
{
    double t_start, t_end;

    DATA_TYPE* data_gpu;
    DATA_TYPE* mean_gpu;
    DATA_TYPE* symmat_gpu;

    CUDA_CHECK(cudaMalloc((void**)&data_gpu, sizeof(DATA_TYPE) * M * N));
    CUDA_CHECK(cudaMalloc((void**)&symmat_gpu, sizeof(DATA_TYPE) * M * M));
    CUDA_CHECK(cudaMalloc((void**)&mean_gpu, sizeof(DATA_TYPE) * M));
    CUDA_CHECK(cudaMemcpy(data_gpu, data, sizeof(DATA_TYPE) * M * N, cudaMemcpyHostToDevice));

    dim3 block1(DIM_THREAD_BLOCK_KERNEL_1_X, DIM_THREAD_BLOCK_KERNEL_1_Y);
    dim3 grid1((M + DIM_THREAD_BLOCK_KERNEL_1_X - 1) / DIM_THREAD_BLOCK_KERNEL_1_X, 1);

    /* x runs over the rows here, y over the columns. */
    dim3 block2(DIM_THREAD_BLOCK_KERNEL_2_X, DIM_THREAD_BLOCK_KERNEL_2_Y);
    dim3 grid2((size_t)ceil(((float)N) / ((float)DIM_THREAD_BLOCK_KERNEL_2_X)),
               (size_t)ceil(((float)M) / ((float)DIM_THREAD_BLOCK_KERNEL_2_Y)));

    dim3 block3(DIM_THREAD_BLOCK_KERNEL_3_X, DIM_THREAD_BLOCK_KERNEL_3_Y);
    dim3 grid3((size_t)ceil(((float)M) / ((float)block3.x)), (size_t)ceil(((float)M) / ((float)block3.y)));

    t_start = wall_time();
    mean_kernel<<<grid1, block1>>>(mean_gpu, data_gpu);
    CUDA_CHECK_KERNEL();
    center_kernel<<<grid2, block2>>>(mean_gpu, data_gpu);
    CUDA_CHECK_KERNEL();
    covar_kernel<<<grid3, block3>>>(symmat_gpu, data_gpu);
    CUDA_CHECK_KERNEL();
    t_end = wall_time();
    fprintf(stdout, "GPU Runtime: %0.6lfs\n", t_end - t_start);

    CUDA_CHECK(cudaMemcpy(symmat_outputFromGpu, symmat_gpu, sizeof(DATA_TYPE) * M * M, cudaMemcpyDeviceToHost));

    cudaFree(data_gpu);
    cudaFree(symmat_gpu);
    cudaFree(mean_gpu);
}

int main()
{
    double t_start, t_end;

    DATA_TYPE* data = host_alloc<DATA_TYPE>((size_t)M * N);
    DATA_TYPE* symmat = host_alloc<DATA_TYPE>((size_t)M * M);
    DATA_TYPE* mean = host_alloc<DATA_TYPE>(M);
    DATA_TYPE* symmat_outputFromGpu = host_alloc<DATA_TYPE>((size_t)M * M);

    init_arrays(data);

    print_device();
    covarianceCuda(data, symmat_outputFromGpu);

    t_start = wall_time();
    covariance(data, symmat, mean);
    t_end = wall_time();
    fprintf(stdout, "CPU Runtime: %0.6lfs\n", t_end - t_start);

    int fail = compare_arrays("symmat", symmat, symmat_outputFromGpu, (size_t)M * M, PERCENT_DIFF_ERROR_THRESHOLD);

    free(data);
    free(symmat);
    free(mean);
    free(symmat_outputFromGpu);

    return fail > 0 ? 1 : 0;
}

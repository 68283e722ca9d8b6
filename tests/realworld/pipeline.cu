// Multi-kernel pipeline: column means -> center -> covariance (data mining style).
#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime.h>

#define CUDA_SAFE_CALL(x) { cudaError_t _e = (x); if (_e != cudaSuccess) { printf("CUDA err %d line %d\n", _e, __LINE__); exit(-1); } }

#ifndef M_DIM
# define M_DIM 2048
#endif
#ifndef N_DIM
# define N_DIM 2048
#endif
#define FLOAT_N 3214212.01f

__global__ void mean_kernel(float *mean, float *data)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < M_DIM) {
        mean[j] = 0.0f;
        for (int i = 0; i < N_DIM; i++)
            mean[j] += data[i * M_DIM + j];
        mean[j] /= FLOAT_N;
    }
}

__global__ void reduce_kernel(float *mean, float *data)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    if ((i < N_DIM) && (j < M_DIM))
        data[i * M_DIM + j] -= mean[j];
}

__global__ void covar_kernel(float *symmat, float *data)
{
    int j1 = blockIdx.x * blockDim.x + threadIdx.x;
    if (j1 < M_DIM) {
        for (int j2 = j1; j2 < M_DIM; j2++) {
            symmat[j1 * M_DIM + j2] = 0.0f;
            for (int i = 0; i < N_DIM; i++)
                symmat[j1 * M_DIM + j2] += data[i * M_DIM + j1] * data[i * M_DIM + j2];
            symmat[j2 * M_DIM + j1] = symmat[j1 * M_DIM + j2];
        }
    }
}

int main()
{
    float *data = (float *)malloc(sizeof(float) * M_DIM * N_DIM);
    for (int i = 0; i < M_DIM * N_DIM; i++) data[i] = (float)(i % 17) / 17.0f;
    float *d_data, *d_mean, *d_symmat;
    CUDA_SAFE_CALL(cudaMalloc((void **)&d_data, sizeof(float) * M_DIM * N_DIM));
    CUDA_SAFE_CALL(cudaMalloc((void **)&d_mean, sizeof(float) * M_DIM));
    CUDA_SAFE_CALL(cudaMalloc((void **)&d_symmat, sizeof(float) * M_DIM * M_DIM));
    CUDA_SAFE_CALL(cudaMemcpy(d_data, data, sizeof(float) * M_DIM * N_DIM, cudaMemcpyHostToDevice));

    dim3 block1(256, 1);
    dim3 grid1((M_DIM + 255) / 256, 1);
    dim3 block2(32, 8);
    dim3 grid2((M_DIM + 31) / 32, (N_DIM + 7) / 8);

    mean_kernel<<<grid1, block1>>>(d_mean, d_data);
    reduce_kernel<<<grid2, block2>>>(d_mean, d_data);
    covar_kernel<<<grid1, block1>>>(d_symmat, d_data);
    CUDA_SAFE_CALL(cudaDeviceSynchronize());

    float *symmat = (float *)malloc(sizeof(float) * M_DIM * M_DIM);
    CUDA_SAFE_CALL(cudaMemcpy(symmat, d_symmat, sizeof(float) * M_DIM * M_DIM, cudaMemcpyDeviceToHost));
    printf("%f\n", symmat[0]);
    return 0;
}

// Multi-kernel pipeline: column means -> center -> covariance (data mining style).
#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime.h>

#define CUDA_CALL(x) { cudaError_t rc_ = (x); if (rc_ != cudaSuccess) { printf("line %d: CUDA error %d\n", __LINE__, rc_); exit(-1); } }

#ifndef M_DIM
# define M_DIM 2048
#endif
#ifndef N_DIM
# define N_DIM 2048
#endif
#define SAMPLE_COUNT ((float)N_DIM)

// Column means, a thread per column, summed straight into the output.
__global__ void col_mean(float *avg, float *x)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < M_DIM) {
        avg[c] = 0.0f;
        for (int r = 0; r < N_DIM; r++)
            avg[c] += x[r * M_DIM + c];
        avg[c] /= SAMPLE_COUNT;
    }
}

// Each column's mean subtracted, a thread per element.
__global__ void center_cols(float *avg, float *x)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (c < M_DIM && r < N_DIM)
        x[r * M_DIM + c] -= avg[c];
}

// The upper triangle of X^T X, a thread per row of it, mirrored into the lower one as it goes.
__global__ void cov_upper(float *cov, float *x)
{
    int a = blockIdx.x * blockDim.x + threadIdx.x;
    if (a < M_DIM) {
        for (int b = a; b < M_DIM; b++) {
            cov[a * M_DIM + b] = 0.0f;
            for (int r = 0; r < N_DIM; r++)
                cov[a * M_DIM + b] += x[r * M_DIM + a] * x[r * M_DIM + b];
            cov[b * M_DIM + a] = cov[a * M_DIM + b];
        }
    }
}

int main()
{
    float *x = (float *)malloc(sizeof(float) * M_DIM * N_DIM);
    for (int i = 0; i < M_DIM * N_DIM; i++) x[i] = (float)(i % 17) / 17.0f;
    float *d_x, *d_avg, *d_cov;
    CUDA_CALL(cudaMalloc((void **)&d_x, sizeof(float) * M_DIM * N_DIM));
    CUDA_CALL(cudaMalloc((void **)&d_avg, sizeof(float) * M_DIM));
    CUDA_CALL(cudaMalloc((void **)&d_cov, sizeof(float) * M_DIM * M_DIM));
    CUDA_CALL(cudaMemcpy(d_x, x, sizeof(float) * M_DIM * N_DIM, cudaMemcpyHostToDevice));

    dim3 block1(256, 1);
    dim3 grid1((M_DIM + 255) / 256, 1);
    dim3 block2(32, 8);
    dim3 grid2((M_DIM + 31) / 32, (N_DIM + 7) / 8);

    col_mean<<<grid1, block1>>>(d_avg, d_x);
    center_cols<<<grid2, block2>>>(d_avg, d_x);
    cov_upper<<<grid1, block1>>>(d_cov, d_x);
    CUDA_CALL(cudaDeviceSynchronize());

    float *cov = (float *)malloc(sizeof(float) * M_DIM * M_DIM);
    CUDA_CALL(cudaMemcpy(cov, d_cov, sizeof(float) * M_DIM * M_DIM, cudaMemcpyDeviceToHost));
    printf("%f\n", cov[0]);
    return 0;
}

// Batched GEMMs as attention code writes them before reaching for cuBLAS.
#include <cuda_runtime.h>

// C[b] = A[b] (M x K) * B[b] (K x N), row-major, batch along blockIdx.z.
__global__ void bmm_naive(const float *A, const float *B, float *C, int M, int N, int K)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int b = blockIdx.z;
    if (row < M && col < N) {
        const float *a = A + (size_t)b * M * K;
        const float *bb = B + (size_t)b * K * N;
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += a[row * K + k] * bb[k * N + col];
        C[(size_t)b * M * N + row * N + col] = acc;
    }
}

// scores[b, i, j] = scale * sum_d Q[b, i, d] * K[b, j, d]   (Q K^T)
__global__ void attn_scores(const float *Q, const float *Kmat, float *S, int L, int D, float scale)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int bh = blockIdx.z;
    if (i < L && j < L) {
        float s = 0.f;
        for (int d = 0; d < D; d++)
            s += Q[(bh * L + i) * D + d] * Kmat[(bh * L + j) * D + d];
        S[(bh * L + i) * L + j] = s * scale;
    }
}

void run(const float *A, const float *B, float *C, int batch, int M, int N, int K)
{
    dim3 block(16, 16);
    dim3 grid((N + 15) / 16, (M + 15) / 16, batch);
    bmm_naive<<<grid, block>>>(A, B, C, M, N, K);
}

void run_scores(const float *Q, const float *K, float *S, int BH, int L, int D)
{
    dim3 block(32, 8);
    dim3 grid((L + 31) / 32, (L + 7) / 8, BH);
    attn_scores<<<grid, block>>>(Q, K, S, L, D, 0.125f);
}

// BLAS-style SGEMM with leading dimensions: C = alpha * op(A) * op(B) + beta * C
#include <cuda_runtime.h>

#define IDX2C(i, j, ld) (((j) * (ld)) + (i))   // column-major, cuBLAS convention

// Column-major, no transpose: C(m x n), A(m x k), B(k x n)
__global__ void sgemm_nn_colmajor(int m, int n, int k, float alpha,
                                  const float *A, int lda,
                                  const float *B, int ldb,
                                  float beta, float *C, int ldc)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;   // row of C
    int j = blockIdx.y * blockDim.y + threadIdx.y;   // col of C
    if (i < m && j < n) {
        float sum = 0.0f;
        for (int p = 0; p < k; ++p)
            sum += A[IDX2C(i, p, lda)] * B[IDX2C(p, j, ldb)];
        C[IDX2C(i, j, ldc)] = alpha * sum + beta * C[IDX2C(i, j, ldc)];
    }
}

// Row-major with A transposed (A stored k x m), and a beta == 0 special case.
__global__ void sgemm_tn_rowmajor(int M, int N, int K, float alpha, const float *A, int lda,
                                  const float *B, int ldb, float beta, float *C, int ldc)
{
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.f;
    #pragma unroll 4
    for (int kk = 0; kk < K; ++kk) {
        acc = fmaf(A[kk * lda + row], B[kk * ldb + col], acc);
    }
    if (beta == 0.f)
        C[row * ldc + col] = alpha * acc;
    else
        C[row * ldc + col] = alpha * acc + beta * C[row * ldc + col];
}

void sgemm(int m, int n, int k, const float *A, const float *B, float *C)
{
    dim3 threads(16, 16);
    dim3 blocks((m + threads.x - 1) / threads.x, (n + threads.y - 1) / threads.y);
    sgemm_nn_colmajor<<<blocks, threads>>>(m, n, k, 1.0f, A, m, B, k, 0.0f, C, m);
}

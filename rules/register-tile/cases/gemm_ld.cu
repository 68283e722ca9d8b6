// C = alpha * A * B + beta * C with leading dimensions: a row of A starts every lda floats, so
// with lda not a multiple of 4 most rows are not 16-byte aligned.
__global__ void gemm_ld(const float* A, const float* B, float* C, int M, int N, int K, int lda, int ldb,
                        float alpha, float beta)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N)
        return;
    float sum = 0.0f;
    for (int k = 0; k < K; k++)
        sum += A[row * lda + k] * B[k * ldb + col];
    C[row * N + col] = alpha * sum + beta * C[row * N + col];
}

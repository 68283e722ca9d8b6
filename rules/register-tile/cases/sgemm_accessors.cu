// SGEMM in the BLAS style: column-major accessor macros over leading dimensions, alpha and beta.
#define A(i, j) a[(j) * lda + (i)]
#define B(i, j) b[(j) * ldb + (i)]
#define C(i, j) c[(j) * ldc + (i)]
__global__ void sgemm_nn(int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
                         float beta, float* c, int ldc)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < m && j < n) {
        float acc = 0.0f;
        for (int p = 0; p < k; ++p)
            acc += A(i, p) * B(p, j);
        C(i, j) = alpha * acc + beta * C(i, j);
    }
}

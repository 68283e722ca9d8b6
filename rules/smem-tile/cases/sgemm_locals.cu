// Parboil's style of matrix product: column-major operands staged in locals before the update.
__global__ void sgemm_locals(const float* A, int lda, const float* B, int ldb, float* C, int ldc, int m, int n, int k)
{
    int im = blockIdx.x * blockDim.x + threadIdx.x;
    int in = blockIdx.y * blockDim.y + threadIdx.y;
    if (im < m && in < n) {
        float c = 0.0f;
        for (int i = 0; i < k; ++i) {
            float a = A[im + i * lda];
            float b = B[in + i * ldb];
            c += a * b;
        }
        C[im + in * ldc] = c;
    }
}

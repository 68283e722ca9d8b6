// C = A * B^T, all three column-major behind their own leading dimensions; each factor is read
// into a named local before the multiply-add (as older benchmark ports write the product).
__global__ void sgemm_locals(const float* A, int lda, const float* B, int ldb, float* C, int ldc, int m, int n, int k)
{
    int row = threadIdx.x + blockIdx.x * blockDim.x;
    int col = threadIdx.y + blockIdx.y * blockDim.y;
    if (row >= m || col >= n)
        return;
    float sum = 0.0f;
    for (int p = 0; p < k; p++) {
        float lhs = A[p * lda + row];
        float rhs = B[p * ldb + col];
        sum += lhs * rhs;
    }
    C[col * ldc + row] = sum;
}

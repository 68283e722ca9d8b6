// samples/matmul.cu as older code spells it (cuopt.training.spellings): accumulation into global
// memory, parenthesized guards, counters declared before their loops, post-increments, a macro type.
#define DATA_TYPE float
// C = A * B for row-major A (M x K), B (K x N), C (M x N).
__global__ void matmul(const DATA_TYPE* A, const DATA_TYPE* B, DATA_TYPE* C, int M, int N, int K)
{
    int k;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if ((row < M) && (col < N)) {
        C[row * N + col] = 0.0f;
        for (k = 0; k < K; k++) {
            C[row * N + col] += A[row * K + k] * B[k * N + col];
        }
    }
}

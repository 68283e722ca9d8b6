// A textbook matrix product whose index takes the block size as a literal: blockIdx.y * 16 + threadIdx.y.
__global__ void matmul16(const float* A, const float* B, float* C, int N)
{
    int Row = blockIdx.y * 16 + threadIdx.y;
    int Col = blockIdx.x * 16 + threadIdx.x;
    if (Row < N && Col < N) {
        float acc = 0.0f;
        for (int k = 0; k < N; ++k)
            acc += A[Row * N + k] * B[k * N + Col];
        C[Row * N + Col] = acc;
    }
}

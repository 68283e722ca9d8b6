// A batch of C = alpha * A^T * B + beta * C (A stored K x M, row-major), one 2D grid per batch
// entry along z: the batch index through a local.
__global__ void gemm_batched(const float* A, const float* B, float* C, int batch, int M, int N, int K,
                             float alpha, float beta)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int z = blockIdx.z;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) {
            acc += A[z * M * K + k * M + row] * B[z * K * N + k * N + col];
        }
        C[z * M * N + row * N + col] = alpha * acc + beta * C[z * M * N + row * N + col];
    }
}

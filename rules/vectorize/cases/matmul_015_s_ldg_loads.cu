// A corpus kernel (cuopt train generate --count 96 --seed 0 --spellings), read through __ldg: vectorize's
// inner-loop mode once wrapped its vector's components in __ldg, a global load of a local.
// C = alpha * A * B^T (row-major, B stored N x K, float), one thread per output
__global__ void matmul_015_s_ldg_loads(const float* A, const float* B, float* C, int M, int N, int K,
                           float alpha)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) {
            acc += __ldg(&A[row * K + k]) * __ldg(&B[col * K + k]);
        }
        C[row * N + col] = alpha * acc;
    }
}

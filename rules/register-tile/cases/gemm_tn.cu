// C = A^T B with A stored K x M (a column of the product's rows per k), both operands read along
// the output axes; the sizes are macros.
#define IDX2(r, c, ld) ((r) * (ld) + (c))
__global__ void gemm_tn(const float* __restrict__ At, const float* __restrict__ B, float* __restrict__ C,
                        int M, int N, int K)
{
    int i = threadIdx.y + blockIdx.y * blockDim.y;
    int j = threadIdx.x + blockIdx.x * blockDim.x;
    if (i < M && j < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += At[IDX2(k, i, M)] * B[IDX2(k, j, N)];
        C[IDX2(i, j, N)] = acc;
    }
}

// Textbook matmul with tx/ty/bx/by aliases, square N, macro block size; plus a shared tiled one.
#define BLOCK_SIZE 16

__global__ void MatMulNaive(float *A, float *B, float *C, int N)
{
    int bx = blockIdx.x, by = blockIdx.y;
    int tx = threadIdx.x, ty = threadIdx.y;
    int i = by * BLOCK_SIZE + ty;
    int j = bx * BLOCK_SIZE + tx;
    float sum = 0;
    if (i < N && j < N) {
        for (int k = 0; k < N; ++k)
            sum += A[i * N + k] * B[k * N + j];
        C[i * N + j] = sum;
    }
}

// Already tiled: cuopt should leave smem-tile alone.
__global__ void MatMulTiled(const float *A, const float *B, float *C, int N)
{
    __shared__ float As[BLOCK_SIZE][BLOCK_SIZE];
    __shared__ float Bs[BLOCK_SIZE][BLOCK_SIZE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * BLOCK_SIZE + ty, col = blockIdx.x * BLOCK_SIZE + tx;
    float acc = 0.f;
    for (int t = 0; t < (N + BLOCK_SIZE - 1) / BLOCK_SIZE; ++t) {
        As[ty][tx] = (row < N && t * BLOCK_SIZE + tx < N) ? A[row * N + t * BLOCK_SIZE + tx] : 0.f;
        Bs[ty][tx] = (col < N && t * BLOCK_SIZE + ty < N) ? B[(t * BLOCK_SIZE + ty) * N + col] : 0.f;
        __syncthreads();
        for (int k = 0; k < BLOCK_SIZE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < N && col < N) C[row * N + col] = acc;
}

int main()
{
    int N = 4096;
    float *A, *B, *C;
    cudaMalloc(&A, N * N * sizeof(float));
    cudaMalloc(&B, N * N * sizeof(float));
    cudaMalloc(&C, N * N * sizeof(float));
    dim3 dimBlock(BLOCK_SIZE, BLOCK_SIZE);
    dim3 dimGrid((N + dimBlock.x - 1) / dimBlock.x, (N + dimBlock.y - 1) / dimBlock.y);
    MatMulNaive<<<dimGrid, dimBlock>>>(A, B, C, N);
    MatMulTiled<<<dimGrid, dimBlock>>>(A, B, C, N);
    cudaDeviceSynchronize();
    return 0;
}

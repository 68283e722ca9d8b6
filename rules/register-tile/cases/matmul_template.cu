// A matrix product written once for every element type, instantiated for float.
template <typename T>
__global__ void matmul_t(const T* A, const T* B, T* C, int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        T sum = 0;
        for (int k = 0; k < K; ++k) {
            sum += A[row * K + k] * B[k * N + col];
        }
        C[row * N + col] = sum;
    }
}

template __global__ void matmul_t<float>(const float*, const float*, float*, int, int, int);

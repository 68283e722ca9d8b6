// Launch wrappers as extension code writes them: the sizes arrive as the wrapper's parameters at
// run time, a block per row, the row count never passed to the kernel.
#include <cuda_runtime.h>

__global__ void row_scale(const float* __restrict__ in, float* __restrict__ out, const float* __restrict__ scale,
                          int cols)
{
    const float s = scale[blockIdx.x];
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        out[blockIdx.x * cols + c] = s * in[blockIdx.x * cols + c];
}

__global__ void row_sum(const float* in, float* out, int cols)
{
    __shared__ float partial[256];
    const int row = blockIdx.x;
    float acc = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        acc += in[row * cols + c];
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            partial[threadIdx.x] += partial[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[row] = partial[0];
}

void launch_row_scale(const float* in, float* out, const float* scale, int rows, int cols, cudaStream_t stream)
{
    row_scale<<<rows, 256, 0, stream>>>(in, out, scale, cols);
}

void launch_row_sum(const float* in, float* out, int rows, int cols, cudaStream_t stream)
{
    row_sum<<<rows, 256, 0, stream>>>(in, out, cols);
}

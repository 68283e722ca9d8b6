// Attention-probability softmax written one block per row with a dynamic shared buffer, as many
// inference engines write it, and a per-column sum of the probabilities (for an entropy
// regularizer) added with one atomic per row and column.
#include <cstdio>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t err = (x); if (err != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(err), __FILE__, __LINE__); return 1; } } while (0)

__global__ void softmax_block_rows(float* __restrict__ probs, const float* __restrict__ logits, int rows, int cols)
{
    extern __shared__ float red[];
    const int r = blockIdx.x;
    const float* in = logits + (size_t)r * cols;
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) mx = fmaxf(mx, in[j]);
    red[threadIdx.x] = mx;
    __syncthreads();
    for (int s = blockDim.x >> 1; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    mx = red[0];
    __syncthreads();
    float total = 0.f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) total += __expf(in[j] - mx);
    red[threadIdx.x] = total;
    __syncthreads();
    for (int s = blockDim.x >> 1; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    total = red[0];
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        probs[(size_t)r * cols + j] = __expf(in[j] - mx) / total;
}

__global__ void column_mass(float* mass, const float* probs, int rows, int cols)
{
    const int r = blockIdx.x;
    if (r >= rows) return;
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        atomicAdd(&mass[j], probs[(size_t)r * cols + j]);
}

int main(int argc, char** argv)
{
    int rows = 4096, cols = 1024;
    float *logits, *probs, *mass;
    CHECK(cudaMalloc(&logits, sizeof(float) * rows * cols));
    CHECK(cudaMalloc(&probs, sizeof(float) * rows * cols));
    CHECK(cudaMalloc(&mass, sizeof(float) * cols));
    CHECK(cudaMemset(logits, 0, sizeof(float) * rows * cols));
    CHECK(cudaMemset(mass, 0, sizeof(float) * cols));
    const int threads = 256;
    softmax_block_rows<<<rows, threads, threads * sizeof(float)>>>(probs, logits, rows, cols);
    column_mass<<<rows, threads>>>(mass, probs, rows, cols);
    CHECK(cudaDeviceSynchronize());
    return 0;
}

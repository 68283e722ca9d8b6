// Backward kernels of a normalization layer and a shared bias, written the way a small training
// engine writes them: one block per row for the norm, the batch on the grid's y for the bias, the
// parameter gradients summed over rows with atomics.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CUDA_OK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
    std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); std::exit(1); } } while (0)

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

// The block's sum of v, returned to every thread: a shuffle tree inside each warp, then the warps'
// partials through shared memory.
__device__ __forceinline__ float block_sum(float v, float* partials)
{
    for (int mask = 16; mask > 0; mask >>= 1) v += __shfl_xor_sync(0xffffffffu, v, mask);
    if ((threadIdx.x & 31) == 0) partials[threadIdx.x >> 5] = v;
    __syncthreads();
    float total = 0.f;
    for (int w = 0; w < kWarps; ++w) total += partials[w];
    __syncthreads();
    return total;
}

__global__ void norm_backward_rows(float* __restrict__ dx, float* dgamma, float* dbeta,
                                   const float* __restrict__ dy, const float* __restrict__ x,
                                   const float* __restrict__ gamma, const float* __restrict__ mu,
                                   const float* __restrict__ inv_std, int N, int D)
{
    __shared__ float warp_part[kWarps];
    const int n = blockIdx.x;
    if (n >= N) return;
    const size_t base = (size_t)n * D;
    const float mean = mu[n];
    const float rs = inv_std[n];
    float sum_g = 0.f, sum_gx = 0.f;
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        const float g = gamma[d] * dy[base + d];
        sum_g += g;
        sum_gx += g * (x[base + d] - mean) * rs;
    }
    sum_g = block_sum(sum_g, warp_part) / D;
    sum_gx = block_sum(sum_gx, warp_part) / D;
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        const float grad = dy[base + d];
        const float xhat = (x[base + d] - mean) * rs;
        atomicAdd(&dbeta[d], grad);
        atomicAdd(&dgamma[d], grad * xhat);
        dx[base + d] = (gamma[d] * grad - sum_g - xhat * sum_gx) * rs;
    }
}

__global__ void shared_bias_backward(float* dbias, const float* dout, int T, int OC)
{
    const int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= OC) return;
    const float* seq = dout + (size_t)blockIdx.y * T * OC;
    float acc = 0.f;
    for (int t = 0; t < T; ++t)
        acc += seq[(size_t)t * OC + o];
    atomicAdd(dbias + o, acc);
}

int main()
{
    const int B = 8, T = 1024, D = 768;
    const int N = B * T;
    std::vector<float> h((size_t)N * D, 0.5f);
    float *dx, *dgamma, *dbeta, *dy, *x, *gamma, *mu, *inv_std, *dbias;
    CUDA_OK(cudaMalloc(&dx, sizeof(float) * N * D));
    CUDA_OK(cudaMalloc(&dy, sizeof(float) * N * D));
    CUDA_OK(cudaMalloc(&x, sizeof(float) * N * D));
    CUDA_OK(cudaMalloc(&dgamma, sizeof(float) * D));
    CUDA_OK(cudaMalloc(&dbeta, sizeof(float) * D));
    CUDA_OK(cudaMalloc(&gamma, sizeof(float) * D));
    CUDA_OK(cudaMalloc(&mu, sizeof(float) * N));
    CUDA_OK(cudaMalloc(&inv_std, sizeof(float) * N));
    CUDA_OK(cudaMalloc(&dbias, sizeof(float) * D));
    CUDA_OK(cudaMemcpy(dy, h.data(), sizeof(float) * N * D, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(x, h.data(), sizeof(float) * N * D, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(dgamma, 0, sizeof(float) * D));
    CUDA_OK(cudaMemset(dbeta, 0, sizeof(float) * D));
    CUDA_OK(cudaMemset(dbias, 0, sizeof(float) * D));
    norm_backward_rows<<<N, kThreads>>>(dx, dgamma, dbeta, dy, x, gamma, mu, inv_std, N, D);
    dim3 grid((D + 127) / 128, B);
    shared_bias_backward<<<grid, 128>>>(dbias, dy, T, D);
    CUDA_OK(cudaDeviceSynchronize());
    std::printf("done\n");
    return 0;
}

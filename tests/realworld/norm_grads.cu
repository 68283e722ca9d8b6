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

__global__ void norm_backward_rows(float* dx, float* dgamma, float* dbeta, const float* dy,
                                   const float* x, const float* gamma, const float* mu,
                                   const float* inv_std, int N, int D)
{
    __shared__ float s_a[kThreads];
    __shared__ float s_b[kThreads];
    const int n = blockIdx.x;
    if (n >= N) return;
    const float* dyr = dy + (size_t)n * D;
    const float* xr = x + (size_t)n * D;
    const float m = mu[n], is = inv_std[n];
    float a = 0.f, b = 0.f;
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        const float g = gamma[d] * dyr[d];
        a += g;
        b += g * (xr[d] - m) * is;
    }
    s_a[threadIdx.x] = a;
    s_b[threadIdx.x] = b;
    __syncthreads();
    for (int off = blockDim.x / 2; off > 0; off >>= 1) {
        if (threadIdx.x < off) {
            s_a[threadIdx.x] += s_a[threadIdx.x + off];
            s_b[threadIdx.x] += s_b[threadIdx.x + off];
        }
        __syncthreads();
    }
    a = s_a[0] / D;
    b = s_b[0] / D;
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        const float xh = (xr[d] - m) * is;
        atomicAdd(&dgamma[d], dyr[d] * xh);
        atomicAdd(&dbeta[d], dyr[d]);
        dx[(size_t)n * D + d] = (gamma[d] * dyr[d] - a - xh * b) * is;
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

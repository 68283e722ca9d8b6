// RMSNorm and LayerNorm, templated on element type, one thread per token.
#include <cuda_fp16.h>

template <typename T>
__device__ __forceinline__ float to_float(T v) { return static_cast<float>(v); }
template <>
__device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }

template <typename T>
__global__ void rmsnorm_kernel(T *out, const T *inp, const T *weight, float eps, int num_tokens, int hidden)
{
    int token = blockIdx.x * blockDim.x + threadIdx.x;
    if (token >= num_tokens) return;
    float ss = 0.0f;
    for (int i = 0; i < hidden; ++i) {
        float v = to_float(inp[token * hidden + i]);
        ss += v * v;
    }
    float scale = rsqrtf(ss / hidden + eps);
    for (int i = 0; i < hidden; ++i) {
        out[token * hidden + i] = (T)(to_float(inp[token * hidden + i]) * scale * to_float(weight[i]));
    }
}

// LayerNorm of each token's C features, fp32 throughout; the mean and the reciprocal deviation are
// saved for the backward pass.
__global__ void layernorm_tokens(float *y, float *mean_out, float *rstd_out,
                                 const float *x, const float *g, const float *b,
                                 int N, int C)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < N) {
        const float *row = x + t * C;
        float sum = 0.0f;
        for (int k = 0; k < C; k++) sum += row[k];
        float avg = sum / C;
        float ss = 0.0f;
        for (int k = 0; k < C; k++) {
            float dev = row[k] - avg;
            ss += dev * dev;
        }
        float r = 1.0f / sqrtf(ss / C + 1e-5f);
        float *dst = y + t * C;
        for (int k = 0; k < C; k++) {
            dst[k] = (row[k] - avg) * r * g[k] + b[k];
        }
        mean_out[t] = avg;
        rstd_out[t] = r;
    }
}

template __global__ void rmsnorm_kernel<float>(float *, const float *, const float *, float, int, int);

void launch_ln(float *y, float *mu, float *rs, const float *x, const float *g, const float *b, int B, int T, int C)
{
    const int tokens = B * T;
    const int threads = 256;
    const int blocks = (tokens + threads - 1) / threads;
    layernorm_tokens<<<blocks, threads>>>(y, mu, rs, x, g, b, tokens, C);
}

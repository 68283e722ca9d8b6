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

__global__ void layernorm_fwd(float *out, float *mean, float *rstd,
                              const float *inp, const float *weight, const float *bias,
                              int N, int C)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < N) {
        const float *x = inp + idx * C;
        float m = 0.0f;
        for (int i = 0; i < C; i++) m += x[i];
        m = m / C;
        float v = 0.0f;
        for (int i = 0; i < C; i++) {
            float xshift = x[i] - m;
            v += xshift * xshift;
        }
        v = v / C;
        float s = 1.0f / sqrtf(v + 1e-5f);
        float *out_idx = out + idx * C;
        for (int i = 0; i < C; i++) {
            float n = (s * (x[i] - m));
            out_idx[i] = n * weight[i] + bias[i];
        }
        mean[idx] = m;
        rstd[idx] = s;
    }
}

template __global__ void rmsnorm_kernel<float>(float *, const float *, const float *, float, int, int);

void launch_ln(float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b, int B, int T, int C)
{
    const int block_size = 256;
    const int N = B * T;
    const int grid_size = (N + block_size - 1) / block_size;
    layernorm_fwd<<<grid_size, block_size>>>(out, mean, rstd, inp, w, b, N, C);
}

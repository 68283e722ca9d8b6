#define WARP_SIZE 32

// RMS norm, a warp per row, as a hand-written kernel spells it.
__global__ void rmsnorm_warp(const float* __restrict__ in, const float* __restrict__ weight,
                             float* __restrict__ out, int n_rows, int dim, float eps)
{
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / WARP_SIZE;
    int lane = threadIdx.x & 31;
    if (warp >= n_rows) return;
    const long base = (long)warp * dim;
    float ss = 0.f;
    for (int i = lane; i < dim; i += WARP_SIZE) {
        float v = in[base + i];
        ss += v * v;
    }
    #pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        ss += __shfl_xor_sync(0xffffffff, ss, off);
    float inv = rsqrtf(ss / dim + eps);
    for (int i = lane; i < dim; i += WARP_SIZE)
        out[base + i] = in[base + i] * inv * weight[i];
}

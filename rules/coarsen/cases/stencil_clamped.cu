// 1D 7-point stencil, weights from w, indices clamped at the ends
__global__ void stencil_clamped(const float* __restrict__ in, const float* __restrict__ w,
                            float* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = 0.0f;
    for (int j = -3; j <= 3; ++j) {
        int p = min(max(i + j, 0), n - 1);
        out[i] += w[j + 3] * in[p];
    }
}

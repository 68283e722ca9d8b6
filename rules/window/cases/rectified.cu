// A filter of the positive inputs only: the tap's second read of in[i + j] and its weight read run
// under a `?:`, while the condition reads in[i + j] at every tap (so a window may load it).
__global__ void rectified(const float* in, const float* w, float* out, int n, int k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n - k + 1) {
        float acc = 0.0f;
        for (int j = 0; j < k; ++j)
            acc += in[i + j] > 0.0f ? in[i + j] * w[j] : 0.0f;
        out[i] = acc;
    }
}

// Softmax over the last axis of attention scores shaped (B, NH, T, T): blockIdx.y picks the
// (batch, head) slice, one thread per query row t within it.
__global__ void softmax_heads(const float* scores, float* probs, int T)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    const float* in = scores + (size_t)blockIdx.y * T * T;
    float* out = probs + (size_t)blockIdx.y * T * T;
    if (t < T) {
        float top = -INFINITY;
        for (int k = 0; k < T; ++k) {
            top = fmaxf(top, in[t * T + k]);
        }
        float total = 0.0f;
        for (int k = 0; k < T; ++k) {
            total += expf(in[t * T + k] - top);
        }
        float scale = 1.0f / total;
        for (int k = 0; k < T; ++k) {
            out[t * T + k] = expf(in[t * T + k] - top) * scale;
        }
    }
}

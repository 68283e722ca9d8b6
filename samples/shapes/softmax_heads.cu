// Softmax over the last axis of attention scores shaped (B, NH, T, T): blockIdx.y picks the
// (batch, head) slice, one thread per query row t within it.
__global__ void softmax_heads(const float* scores, float* probs, int T)
{
    const size_t slice = (size_t)blockIdx.y * T * T;
    const int t = threadIdx.x + blockIdx.x * blockDim.x;
    if (t >= T) return;
    const float* row = scores + slice + (size_t)t * T;
    float* dst = probs + slice + (size_t)t * T;
    float peak = -INFINITY;
    for (int k = 0; k < T; k++)
        peak = fmaxf(peak, row[k]);
    float denom = 0.0f;
    for (int k = 0; k < T; k++)
        denom += expf(row[k] - peak);
    for (int k = 0; k < T; k++)
        dst[k] = expf(row[k] - peak) / denom;
}

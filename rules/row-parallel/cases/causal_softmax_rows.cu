// Causal attention softmax, one thread per (batch, query, head) row with the head varying fastest:
// the row's offset is a permutation of the thread index, not an affine index, and the row is
// written through a pointer while the exponentials are summed, then scaled in place.
__global__ void causal_softmax_rows(float* att, const float* pre, int B, int T, int NH)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < B * T * NH) {
        int h = row % NH;
        int t = (row / NH) % T;
        int b = row / (NH * T);
        const float* src = pre + b * NH * T * T + h * T * T + t * T;
        float* dst = att + b * NH * T * T + h * T * T + t * T;
        float peak = -10000.0f;
        for (int j = 0; j <= t; j++) {
            if (src[j] > peak) {
                peak = src[j];
            }
        }
        float denom = 0.0f;
        for (int j = 0; j <= t; j++) {
            float w = expf(src[j] - peak);
            denom += w;
            dst[j] = w;
        }
        float inv = denom == 0.0f ? 0.0f : 1.0f / denom;
        for (int j = 0; j < T; j++) {
            if (j <= t) {
                dst[j] *= inv;
            } else {
                dst[j] = 0.0f;
            }
        }
    }
}

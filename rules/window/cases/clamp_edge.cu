// A 1D filter with clamp-to-edge addressing (image and audio code): the taps past either end read
// the end element, through a local clamped index.
#define RADIUS 8

__global__ void filter_clamp(const float* __restrict__ in, const float* __restrict__ w, float* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float acc = 0.0f;
        for (int j = -RADIUS; j <= RADIUS; ++j) {
            int k = min(max(i + j, 0), n - 1);
            acc += w[j + RADIUS] * in[k];
        }
        out[i] = acc;
    }
}

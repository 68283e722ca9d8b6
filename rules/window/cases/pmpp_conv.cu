// A "same" 1D convolution of radius r as course code writes it: the window's first tap i - r kept
// in a local, taps that fall off either end skipped (zero padding), the mask read from global memory.
__global__ void conv1d_radius(const float *in, const float *mask, float *out, int r, int width)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < width) {
        int lo = i - r;
        float acc = 0;
        for (int k = 0; k <= 2 * r; k++) {
            if (lo + k < width && lo + k >= 0)
                acc += mask[k] * in[lo + k];
        }
        out[i] = acc;
    }
}

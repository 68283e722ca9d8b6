// A 1D convolution adapted so that every thread runs the taps, each read checked against the
// array's ends, and only the store is guarded.
__global__ void conv1d_store_guard(float *in, float *mask, float *out, int mask_width, int width)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lo = i - mask_width / 2;
    float acc = 0;
    for (int k = 0; k < mask_width; k++) {
        if (lo + k < width && lo + k >= 0)
            acc += mask[k] * in[lo + k];
    }
    if (i < width) out[i] = acc;
}

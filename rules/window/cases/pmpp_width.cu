// A "same" 1D convolution with the mask's width a parameter: each tap's source index computed in
// the loop from i - mask_width / 2, and read only when it lies inside the signal.
__global__ void conv1d_same_kernel(float *in, float *mask, float *out, int mask_width, int width)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < width) {
        float acc = 0;
        for (int k = 0; k < mask_width; k++) {
            int at = i - mask_width / 2 + k;
            if (at >= 0 && at < width)
                acc += mask[k] * in[at];
        }
        out[i] = acc;
    }
}

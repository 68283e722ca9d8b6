// The textbook 1D convolution with a guard and the mask's width a parameter: the taps from
// i - mask_width / 2, each read checked against the array's ends.
__global__ void conv1d_same_kernel(float *in, float *mask, float *out, int mask_width, int width)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < width) {
        float acc = 0;
        int start = i - (mask_width / 2);
        for (int k = 0; k < mask_width; k++) {
            if (start + k >= 0 && start + k < width) {
                acc += in[start + k] * mask[k];
            }
        }
        out[i] = acc;
    }
}

// The textbook 1D convolution as it is often adapted: every thread runs the taps (each read checked
// against the array's ends), only the store is guarded.
__global__ void conv1d_store_guard(float *in, float *mask, float *out, int mask_width, int width)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0;
    int start = i - (mask_width / 2);
    for (int k = 0; k < mask_width; k++) {
        if (start + k >= 0 && start + k < width) {
            acc += in[start + k] * mask[k];
        }
    }
    if (i < width) out[i] = acc;
}

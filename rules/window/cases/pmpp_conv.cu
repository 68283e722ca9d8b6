// A textbook "same" 1D convolution of radius r: the taps start at i - r, each read checked against
// the array's ends (ghost cells are zero), the mask in global memory.
__global__ void conv1d_radius(const float *in, const float *mask, float *out, int r, int width)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < width) {
        float acc = 0;
        int start = i - r;
        for (int k = 0; k < 2 * r + 1; k++) {
            if (start + k >= 0 && start + k < width) {
                acc += in[start + k] * mask[k];
            }
        }
        out[i] = acc;
    }
}

// A "same" 1D convolution (zero padding): every output written, each tap's read checked against
// the array's ends through a local index (signal-processing style).
#define RADIUS 8

__global__ void conv_same(const float *in, const float *w, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float sum = 0.0f;
        for (int j = -RADIUS; j <= RADIUS; j++) {
            int k = i + j;
            if (k >= 0 && k < n)
                sum += in[k] * w[j + RADIUS];
        }
        out[i] = sum;
    }
}

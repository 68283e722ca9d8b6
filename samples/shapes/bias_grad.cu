// The bias gradient of a linear layer: dbias[o] accumulates the output gradient's column o over
// every (b, t) row. One thread owns one column and walks all B*T rows of it, so a launch has only
// OC threads, each with a B*T-long serial sum.
__global__ void bias_grad(float* dbias, const float* dout, int B, int T, int OC)
{
    int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o < OC) {
        float sum = 0.0f;
        for (int b = 0; b < B; b++) {
            for (int t = 0; t < T; t++) {
                sum += dout[b * T * OC + t * OC + o];
            }
        }
        dbias[o] += sum;
    }
}

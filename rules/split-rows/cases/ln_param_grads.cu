// Layer-norm parameter gradients accumulated over a batch of N rows: one thread per channel sums
// dout * xhat (dgamma) and dout (dbeta) down its column and adds both to the running gradients.
__global__ void ln_param_grads(const float* dout, const float* xhat, float* dgamma, float* dbeta, int N, int C)
{
    int ch = blockIdx.x * blockDim.x + threadIdx.x;
    if (ch < C) {
        float g = 0.0f, b = 0.0f;
        for (int n = 0; n < N; ++n) {
            float d = dout[n * C + ch];
            g += d * xhat[n * C + ch];
            b += d;
        }
        dgamma[ch] += g;
        dbeta[ch] += b;
    }
}

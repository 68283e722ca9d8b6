// Layer-norm backward, one thread per row of C channels. The thread recomputes its row's
// normalized input from the saved mean and reciprocal standard deviation, writes the input
// gradient, and adds the row's share of the weight and bias gradients with atomics: every row
// adds into the same C elements of dweight and dbias.
__global__ void layernorm_bwd(float* dinp, float* dweight, float* dbias,
                              const float* dout, const float* inp, const float* weight,
                              const float* mean, const float* rstd, int rows, int C)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    float mu = mean[row];
    float rs = rstd[row];
    // the row's means of the scaled gradient and of its product with the normalized input
    float g_mean = 0.0f;
    float gx_mean = 0.0f;
    for (int c = 0; c < C; ++c) {
        float xhat = (inp[row * C + c] - mu) * rs;
        float g = weight[c] * dout[row * C + c];
        g_mean += g;
        gx_mean += g * xhat;
    }
    g_mean = g_mean / C;
    gx_mean = gx_mean / C;
    for (int c = 0; c < C; ++c) {
        float dy = dout[row * C + c];
        float xhat = (inp[row * C + c] - mu) * rs;
        atomicAdd(&dbias[c], dy);
        atomicAdd(&dweight[c], xhat * dy);
        float g = weight[c] * dy;
        dinp[row * C + c] = (g - g_mean - xhat * gx_mean) * rs;
    }
}

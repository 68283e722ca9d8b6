// A linear layer's bias gradient in the (batch, time, channel) layout, one thread per output
// channel, leaving early past the last one; each (b, t) row is reached through a row pointer.
__global__ void bias_grad_bt(float* __restrict__ dbias, const float* __restrict__ out_grad, int B, int T, int OC)
{
    const int oc = blockIdx.x * blockDim.x + threadIdx.x;
    if (oc >= OC) return;
    float g = 0.0f;
    for (int b = 0; b < B; ++b) {
        for (int t = 0; t < T; ++t) {
            const float* row = out_grad + (b * T + t) * OC;
            g += row[oc];
        }
    }
    dbias[oc] += g;
}

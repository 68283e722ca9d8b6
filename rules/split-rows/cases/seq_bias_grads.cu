// Per-sequence gradient of a bias that each sequence of the batch owns: grid (cdiv(C, block.x), B),
// blockIdx.y only picks the sequence. The thread of channel c adds the gradients of its sequence's
// T positions into dbias[b * C + c], reading its sequence through a pointer set before the guard.
__global__ void seq_bias_grads(const float* __restrict__ dout, float* dbias, int T, int C)
{
    const float* seq = dout + (size_t)blockIdx.y * T * C;
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float g = 0.0f;
    for (int t = 0; t < T; ++t) {
        g += seq[(size_t)t * C + c];
    }
    dbias[(size_t)blockIdx.y * C + c] += g;
}

// A linear layer as small training code writes its first version: out[r][o] = b[o] + x[r] . w[o],
// the bias optional (a null pointer without one); the accumulator starts at the output's own bias.
__global__ void linear_bias(float* out, const float* x, const float* wt, const float* b,
                            int BT, int C, int OC) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    int o = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < BT && o < OC) {
        const float* x_row = x + r * C;
        const float* w_row = wt + o * C;
        float acc = (b != NULL) ? b[o] : 0.0f;
        for (int c = 0; c < C; c++) {
            acc += x_row[c] * w_row[c];
        }
        out[r * OC + o] = acc;
    }
}

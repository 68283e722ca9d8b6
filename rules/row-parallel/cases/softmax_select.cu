// A softmax whose row maximum is a compare-and-select (`if (v > m) m = v;`), with a double sum and
// a division pass, as reference kernels of training code write it.
#include <math.h>

__global__ void softmax_select(float* probs, const float* logits, int N, int C)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < N) {
        const float* in = logits + r * C;
        float* p = probs + r * C;
        float hi = -INFINITY;
        for (int c = 0; c < C; c++) {
            if (in[c] > hi) {
                hi = in[c];
            }
        }
        double total = 0.0;
        for (int c = 0; c < C; c++) {
            p[c] = expf(in[c] - hi);
            total += p[c];
        }
        for (int c = 0; c < C; c++) {
            p[c] = p[c] / (float)total;
        }
    }
}

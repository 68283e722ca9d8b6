// A per-position loss as small training code writes it: the (sequence, position) pair split from
// one index with / and % and put together again in a local pointer; the label picks one element of
// the row (a gather).
#include <math.h>

__global__ void xent_bt(float* losses, const float* probs, const int* labels, int B, int T, int V)
{
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n < B * T) {
        int seq = n / T;
        int pos = n % T;
        const float* p = probs + seq * T * V + pos * V;
        int label = labels[seq * T + pos];
        losses[seq * T + pos] = -logf(p[label]);
    }
}

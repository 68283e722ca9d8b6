// llm.c-style cross-entropy: the (b, t) pair split from one index with / and % and put together
// again in a local pointer; the target picks one element of the row (a gather).
#include <math.h>

__global__ void xent_bt(float* losses, const float* probs, const int* targets, int B, int T, int V)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < B * T) {
        int b = i / T;
        int t = i % T;
        const float* probs_bt = probs + b * T * V + t * V;
        int ix = targets[b * T + t];
        losses[b * T + t] = -logf(probs_bt[ix]);
    }
}

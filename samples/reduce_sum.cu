// Total of x. Each block of 256 threads loads its slice into shared memory (zeros past the end),
// then folds it in place: at distance d = 1, 2, 4, ... the slots whose index is a multiple of 2d
// take in their neighbour d away, a barrier closing every round. The block's total ends in slot 0
// and its first thread adds it to *out.
__global__ void reduce_sum(const float* x, float* out, int n)
{
    __shared__ float slots[256];
    const int t = threadIdx.x;
    const int g = t + blockIdx.x * blockDim.x;

    slots[t] = g < n ? x[g] : 0.0f;
    __syncthreads();
    for (int d = 1; d < blockDim.x; d *= 2) {
        if (t % (2 * d) == 0)
            slots[t] += slots[t + d];
        __syncthreads();
    }
    if (t == 0)
        atomicAdd(out, slots[0]);
}

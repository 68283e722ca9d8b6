// A column reduction (coalesced, a thread per column) and a block sum through a shared-memory tree.
#define BLOCK 256

__global__ void col_sum(const float *x, float *y, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) {
        float s = 0;
        for (int r = 0; r < rows; r++) s += x[r * cols + c];
        y[c] = s;
    }
}

// A block's elements summed in shared memory by interleaved pairs (the first, divergent form of a
// tree reduction), one partial sum a block.
__global__ void block_partial_sum(const float *in, float *partial, int n)
{
    __shared__ float buf[BLOCK];
    unsigned int t = threadIdx.x;
    unsigned int g = blockIdx.x * blockDim.x + t;
    buf[t] = g < n ? in[g] : 0.0f;
    __syncthreads();
    for (unsigned int gap = 1; gap < blockDim.x; gap <<= 1) {
        if (t % (2 * gap) == 0)
            buf[t] += buf[t + gap];
        __syncthreads();
    }
    if (t == 0) partial[blockIdx.x] = buf[0];
}

void launch(const float *in, float *partial, int n)
{
    block_partial_sum<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(in, partial, n);
}

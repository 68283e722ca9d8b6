// Column reductions (coalesced one-thread-per-column), and a naive block-sum with shared tree.
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

__global__ void block_sum(const float *in, float *partial, int n)
{
    __shared__ float sdata[BLOCK];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = sdata[0];
}

void launch(const float *in, float *partial, int n)
{
    block_sum<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(in, partial, n);
}

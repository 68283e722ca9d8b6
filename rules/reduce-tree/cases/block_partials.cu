// One partial sum per block into partial[blockIdx.x], the grid written with the block's macro
// (the host launches cdiv(n, BLOCK) blocks): another block size would change each partial.
#define BLOCK 256
__global__ void block_partials(const float* x, float* partial, int n)
{
    __shared__ float buf[BLOCK];
    unsigned int t = threadIdx.x;
    unsigned int g = blockIdx.x * blockDim.x + t;
    buf[t] = g < n ? x[g] : 0.0f;
    __syncthreads();
    for (unsigned int half = blockDim.x / 2; half > 0; half >>= 1) {
        if (t < half) buf[t] += buf[t + half];
        __syncthreads();
    }
    if (t == 0) partial[blockIdx.x] = buf[0];
}

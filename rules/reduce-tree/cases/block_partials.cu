// One partial sum per block into partial[blockIdx.x], the grid written with the block's macro
// (the host launches cdiv(n, BLOCK) blocks): another block size would change each partial.
#define BLOCK 256
__global__ void block_partials(const float* x, float* partial, int n)
{
    __shared__ float sdata[BLOCK];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = sdata[0];
}

// The largest value of each block's slice, integers, after an early return.
__global__ void block_max(const int* v, int* best, unsigned int n)
{
    if (blockIdx.x * blockDim.x + threadIdx.x >= n) return;
    atomicMax(&best[blockIdx.x], v[blockIdx.x * blockDim.x + threadIdx.x]);
}

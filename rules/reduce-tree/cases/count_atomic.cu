// An integer sum into one atomic per block, the grid written with the block's macro (the host
// launches cdiv(n, BLOCK) blocks of BLOCK threads).
#define BLOCK 256
__global__ void count_atomic(const int* x, int* total, int n)
{
    __shared__ int buf[BLOCK];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[threadIdx.x] = i < n ? x[i] : 0;
    __syncthreads();
    for (int s = 1; s < blockDim.x; s *= 2) {
        if (threadIdx.x % (2 * s) == 0) buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(total, buf[0]);
}

// Each thread sums a grid-stride range into a register, then the block reduces the partials in a
// shared-memory tree and one atomic per block adds them up (a fixed grid, as a reduction launches it).
__global__ void strided_partial(const int* __restrict__ in, int* __restrict__ out, int n)
{
    __shared__ int sdata[256];
    int acc = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        acc += in[i];
    sdata[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, sdata[0]);
}

// A fixed grid sums n integers: each thread first runs through its grid-stride share keeping a
// private total, the block then halves its 256 totals in shared memory until one is left, and
// thread 0 adds it to *out (one atomic per block).
__global__ void strided_partial(const int* __restrict__ in, int* __restrict__ out, int n)
{
    __shared__ int totals[256];
    const int stride = gridDim.x * blockDim.x;
    int own = 0;
    for (int k = threadIdx.x + blockIdx.x * blockDim.x; k < n; k += stride)
        own += in[k];
    totals[threadIdx.x] = own;
    __syncthreads();
    for (int span = blockDim.x / 2; span > 0; span >>= 1) {
        if (threadIdx.x < span)
            totals[threadIdx.x] += totals[threadIdx.x + span];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(out, totals[0]);
}

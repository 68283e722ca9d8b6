// Per-slice totals of a (slices, T) array: blockIdx.y picks the slice, each block sums its part of
// the slice's T values in a shared-memory tree and adds it to the slice's total.
__global__ void slice_totals(const int* x, int* totals, int T)
{
    __shared__ int part[256];
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    part[threadIdx.x] = t < T ? x[blockIdx.y * T + t] : 0;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(&totals[blockIdx.y], part[0]);
}

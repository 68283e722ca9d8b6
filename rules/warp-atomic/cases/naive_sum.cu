// The naive sum: one atomic per element on one address.
__global__ void naive_sum(const float* __restrict__ x, float* __restrict__ sum, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(sum, x[i]);
}

// Sum of all elements: each block reduces 256 values in shared memory, then adds its
// partial sum to *out with one atomic.
__global__ void reduce_sum(const float* x, float* out, int n)
{
    __shared__ float buf[256];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[tid] = (i < n) ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0) {
            buf[tid] += buf[tid + s];
        }
        __syncthreads();
    }
    if (tid == 0) {
        atomicAdd(out, buf[0]);
    }
}

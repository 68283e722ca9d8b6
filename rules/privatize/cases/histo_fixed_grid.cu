// A histogram of bytes as CUDA by Example writes it: a grid-stride loop over a fixed grid, one
// global atomic per byte.
__global__ void histo_kernel(const unsigned char* buffer, long size, unsigned int* histo)
{
    for (long i = threadIdx.x + blockIdx.x * blockDim.x; i < size; i += blockDim.x * gridDim.x)
        atomicAdd(&histo[buffer[i]], 1u);
}

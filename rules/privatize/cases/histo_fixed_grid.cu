// A byte histogram over a fixed grid, as introductory CUDA books write it: a grid-stride for loop,
// one global atomic per byte.
__global__ void byte_histogram(const unsigned char* bytes, long size, unsigned int* bins)
{
    for (long k = blockIdx.x * blockDim.x + threadIdx.x; k < size; k += gridDim.x * blockDim.x)
        atomicAdd(&bins[bytes[k]], 1u);
}

// CUDA by Example's histogram: a while loop over the grid's stride held in a local, a parenthesized
// address, an int increment into unsigned bins, a fixed grid.
__global__ void histo_kernel(unsigned char* buffer, long size, unsigned int* histo)
{
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    int offset = blockDim.x * gridDim.x;
    while (i < size) {
        atomicAdd(&(histo[buffer[i]]), 1);
        i += offset;
    }
}

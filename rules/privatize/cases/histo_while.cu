// The same histogram in the books' older spelling: a while loop over the grid's stride held in a
// local, a parenthesized address, an int increment into unsigned bins, a fixed grid.
__global__ void byte_histogram_while(unsigned char* bytes, long size, unsigned int* bins)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    int step = gridDim.x * blockDim.x;
    while (k < size) {
        atomicAdd(&(bins[bytes[k]]), 1);
        k += step;
    }
}

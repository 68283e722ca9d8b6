// 256-bin histogram of bytes, one global atomic per input element.
__global__ void histogram(const unsigned char* data, unsigned int* bins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&bins[data[i]], 1u);
    }
}

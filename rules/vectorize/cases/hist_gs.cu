__global__ void histo(const unsigned char* buffer, long size, unsigned int* histo)
{
    for (long i = blockIdx.x * blockDim.x + threadIdx.x; i < size; i += blockDim.x * gridDim.x)
        atomicAdd(&histo[buffer[i]], 1);
}

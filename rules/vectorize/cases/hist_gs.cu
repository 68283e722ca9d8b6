__global__ void byte_hist_gs(const unsigned char* bytes, long size, unsigned int* bins)
{
    for (long k = blockIdx.x * blockDim.x + threadIdx.x; k < size; k += blockDim.x * gridDim.x)
        atomicAdd(&bins[bytes[k]], 1);
}

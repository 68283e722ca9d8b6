// The CUDA samples' older grid-stride loop: indices and the stride by 24-bit multiplies.
__global__ void scaleGridStride(float *d_Out, const float *d_In, float scale, int N)
{
    const int tid = __umul24(blockIdx.x, blockDim.x) + threadIdx.x;
    const int threadN = __umul24(blockDim.x, gridDim.x);
    for (int pos = tid; pos < N; pos += threadN)
        d_Out[pos] = scale * d_In[pos];
}

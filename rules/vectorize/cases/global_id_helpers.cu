// OpenCL's work-item functions as __device__ helpers over the built-ins, in a grid-stride loop.
__device__ __forceinline__ int get_global_id0() { return blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int get_global_size0() { return gridDim.x * blockDim.x; }

__global__ void clamp_all(float *data, float lo, float hi, int n)
{
    for (int i = get_global_id0(); i < n; i += get_global_size0())
        data[i] = fminf(fmaxf(data[i], lo), hi);
}

// A residual add and tanh-approximated GELU over half-precision tensors, fp32 math.
#include <cuda_fp16.h>
__global__ void add_gelu_half(const half* a, const half* b, half* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = __half2float(a[i]) + __half2float(b[i]);
        float t = tanhf(0.7978845608f * (v + 0.044715f * v * v * v));
        y[i] = __float2half(0.5f * v * (1.0f + t));
    }
}

// A per-column tint of a pitched half-precision image, fp32 math.
#include <cuda_fp16.h>
__global__ void tint_half(const half* img, const half* tint, half* out, int width, int height, int pitch)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height)
        out[y * pitch + x] = __float2half(__half2float(img[y * pitch + x]) * __half2float(tint[x]));
}

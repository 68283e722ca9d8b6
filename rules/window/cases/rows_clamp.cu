// The row pass of a separable blur with clamp-to-edge columns, the clamp written inline in the
// index (max inside min, in the other order).
#define R 4

__global__ void rows_clamp(const float* src, float* dst, const float* taps, int width, int height)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) {
        float sum = 0.0f;
        for (int k = -R; k <= R; k++)
            sum += taps[k + R] * src[y * width + max(0, min(x + k, width - 1))];
        dst[y * width + x] = sum;
    }
}

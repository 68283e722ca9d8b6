// 3x3 box blur / 5-point smoothing with clamp-to-edge addressing (image processing style).
#include <cuda_runtime.h>

__device__ __forceinline__ int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

__device__ __forceinline__ int pix(int x, int y, int pitch)
{
    return y * pitch + x;
}

// 5-point cross, clamp to edge, every pixel written.
__global__ void smooth5_clamp(const float* src, float* dst, int width, int height)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;

    int xl = clampi(x - 1, 0, width - 1);
    int xr = clampi(x + 1, 0, width - 1);
    int yu = max(y - 1, 0);
    int yd = min(y + 1, height - 1);

    dst[pix(x, y, width)] = 0.2f * (src[pix(x, y, width)] + src[pix(xl, y, width)] + src[pix(xr, y, width)]
                                    + src[pix(x, yu, width)] + src[pix(x, yd, width)]);
}

// Same thing on the interior only, using the helper for indexing.
__global__ void smooth5_interior(const float* src, float* dst, int width, int height)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || y < 1 || x >= width - 1 || y >= height - 1) return;

    dst[pix(x, y, width)] = 0.2f * (src[pix(x, y, width)] + src[pix(x - 1, y, width)] + src[pix(x + 1, y, width)]
                                    + src[pix(x, y - 1, width)] + src[pix(x, y + 1, width)]);
}

// 3x3 box filter written with loops, the way most image code writes it.
#define RADIUS 1
__global__ void box3x3(const float* src, float* dst, int width, int height)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= RADIUS && y >= RADIUS && x < width - RADIUS && y < height - RADIUS) {
        float acc = 0.0f;
        for (int dy = -RADIUS; dy <= RADIUS; ++dy)
            for (int dx = -RADIUS; dx <= RADIUS; ++dx)
                acc += src[(y + dy) * width + (x + dx)];
        dst[y * width + x] = acc * (1.0f / 9.0f);
    }
}

void run_blur(const float* d_src, float* d_dst, int w, int h)
{
    dim3 block(16, 16);
    dim3 grid((w + 15) / 16, (h + 15) / 16);
    smooth5_clamp<<<grid, block>>>(d_src, d_dst, w, h);
    smooth5_interior<<<grid, block>>>(d_src, d_dst, w, h);
    box3x3<<<grid, block>>>(d_src, d_dst, w, h);
}

// Zero-padded ("same") convolutions as course and image code writes them: a 1D kernel with the
// mask width a parameter and the taps off either end skipped, a blur of odd radius through
// a local source index, and the row pass of a separable 2D filter. The host allocates and launches
// each.
#include <cstdio>
#include <cuda_runtime.h>

#define CHECK(call) do { cudaError_t e = (call); if (e != cudaSuccess) { \
    fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); return 1; } } while (0)

#define BLUR_RADIUS 5
#define ROW_RADIUS 8

__global__ void conv1d_same_kernel(float *in, float *mask, float *out, int mask_width, int width)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < width) {
        const int half = mask_width / 2;
        float acc = 0;
        for (int k = 0; k < mask_width; k++) {
            const int at = i + k - half;
            if (at >= 0 && at < width)
                acc += mask[k] * in[at];
        }
        out[i] = acc;
    }
}

__global__ void blur1d(const float* __restrict__ in, float* __restrict__ out, const float* __restrict__ weights, int n)
{
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n) return;
    float acc = 0.f;
    for (int t = 0; t < 2 * BLUR_RADIUS + 1; ++t) {
        const int src = idx + t - BLUR_RADIUS;
        if (src >= 0 && src < n) acc += weights[t] * in[src];
    }
    out[idx] = acc;
}

__global__ void rows_pass(float *dst, const float *src, const float *taps, int width, int height)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    float sum = 0;
    for (int k = -ROW_RADIUS; k <= ROW_RADIUS; k++) {
        const int d = x + k;
        if (d >= 0 && d < width)
            sum += src[y * width + d] * taps[ROW_RADIUS - k];
    }
    dst[y * width + x] = sum;
}

int main()
{
    const int width = 1 << 22, mask_width = 17, w = 4096, h = 2048;
    float *n, *m, *p, *img, *tmp, *taps;
    CHECK(cudaMalloc(&n, width * sizeof(float)));
    CHECK(cudaMalloc(&m, mask_width * sizeof(float)));
    CHECK(cudaMalloc(&p, width * sizeof(float)));
    CHECK(cudaMalloc(&img, w * h * sizeof(float)));
    CHECK(cudaMalloc(&tmp, w * h * sizeof(float)));
    CHECK(cudaMalloc(&taps, (2 * ROW_RADIUS + 1) * sizeof(float)));
    conv1d_same_kernel<<<(width + 255) / 256, 256>>>(n, m, p, mask_width, width);
    blur1d<<<(width + 127) / 128, 128>>>(n, p, m, width);
    dim3 block(32, 8);
    dim3 grid((w + block.x - 1) / block.x, (h + block.y - 1) / block.y);
    rows_pass<<<grid, block>>>(tmp, img, taps, w, h);
    CHECK(cudaDeviceSynchronize());
    return 0;
}

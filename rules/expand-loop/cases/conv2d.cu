// A 5x5 filter written with two tap loops over a macro radius.
#define R 2
__global__ void conv2d(const float* in, const float* filt, float* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= R && y >= R && x < w - R && y < h - R) {
        float s = 0.0f;
        for (int dy = -R; dy <= R; ++dy)
            for (int dx = -R; dx <= R; ++dx)
                s += filt[(dy + R) * (2 * R + 1) + dx + R] * in[(y + dy) * w + x + dx];
        out[y * w + x] = s;
    }
}

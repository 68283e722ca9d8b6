// A 5-point blur that sums its taps into a local, one statement a tap, then stores.
__global__ void blur5(const float* in, float* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= 1 && x < w - 1 && y >= 1 && y < h - 1) {
        float s = 0.0f;
        s += in[(y - 1) * w + x];
        s += in[y * w + x - 1];
        s += in[y * w + x];
        s += in[y * w + x + 1];
        s += in[(y + 1) * w + x];
        out[y * w + x] = 0.2f * s;
    }
}

// A textbook 2D convolution of radius r: every thread of the grid runs the taps (each read checked
// against the image's edges), only the store is guarded.
#define FILTER_RADIUS 2
__global__ void conv2d_store_guard(float *img, float *filt, float *res, int r, int width, int height)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    float acc = 0.0f;
    for (int dy = 0; dy < 2 * r + 1; dy++) {
        for (int dx = 0; dx < 2 * r + 1; dx++) {
            int sy = y - r + dy;
            int sx = x - r + dx;
            if (sy >= 0 && sy < height && sx >= 0 && sx < width) {
                acc += filt[dy * (2 * r + 1) + dx] * img[sy * width + sx];
            }
        }
    }
    if (y < height && x < width)
        res[y * width + x] = acc;
}

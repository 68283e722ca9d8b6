// A vertical 3-tap blur over a batch of images, one image per blockIdx.z (no threads along z):
// the rows of each image are walked, not the batch.
__global__ void vblur(const float* img, float* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int b = blockIdx.z;
    if (x < w && y > 0 && y < h - 1) {
        const float* p = img + (size_t)b * w * h;
        out[(b * h + y) * w + x] = 0.25f * p[(y - 1) * w + x] + 0.5f * p[y * w + x] + 0.25f * p[(y + 1) * w + x];
    }
}

// Vertical differences of a batch of images along z, weighted per column: each row reads the next
// row of the same image and a per-column weight shared by every row.
__global__ void row_diff_batch(const float* img, const float* weight, float* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int b = blockIdx.z;
    if (x < w && y < h - 1) {
        float d = img[(b * h + y + 1) * w + x] - img[(b * h + y) * w + x];
        out[(b * h + y) * w + x] = d * weight[x];
    }
}

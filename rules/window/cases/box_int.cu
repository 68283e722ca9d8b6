// Sliding sums of `width` integers: an exact, integer window.
__global__ void box_int(const int *src, int *dst, unsigned int count, int width)
{
    unsigned int k = blockDim.x * blockIdx.x + threadIdx.x;
    if (k < count) {
        int total = 0;
        for (int d = 0; d < width; d++) {
            total += src[k + d];
        }
        dst[k] = total;
    }
}

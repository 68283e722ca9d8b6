// The row pass of a separable convolution, written naively (image-processing style): each pixel
// sums its row's neighbours, the ones past the image's left and right edges skipped.
#define KERNEL_RADIUS 8
#define KERNEL_LENGTH (2 * KERNEL_RADIUS + 1)

__global__ void convolutionRowsNaive(float *d_Dst, const float *d_Src, const float *d_Kernel, int imageW, int imageH)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= imageW || y >= imageH) return;

    float sum = 0;
    for (int k = -KERNEL_RADIUS; k <= KERNEL_RADIUS; k++) {
        const int d = x + k;
        if (d >= 0 && d < imageW)
            sum += d_Src[y * imageW + d] * d_Kernel[KERNEL_RADIUS - k];
    }
    d_Dst[y * imageW + x] = sum;
}

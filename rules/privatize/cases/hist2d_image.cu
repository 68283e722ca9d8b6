// 256-bin histogram of an 8-bit image, one thread per pixel on a 2D grid; the pixels of a row
// start `pitch` bytes apart.
__global__ void hist2d(const unsigned char* img, unsigned int* bins, int width, int height, int pitch)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    atomicAdd(&bins[img[y * pitch + x]], 1u);
}

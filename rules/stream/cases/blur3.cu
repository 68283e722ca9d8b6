// A 3x3 box blur over a pitched image, an early return for the border, read-only loads via __ldg.
__global__ void blur3(const float* __restrict__ src, float* __restrict__ dst, int width, int height, int pitch)
{
    const int col = threadIdx.x + blockIdx.x * blockDim.x;
    const int row = threadIdx.y + blockIdx.y * blockDim.y;
    if (col < 1 || row < 1 || col >= width - 1 || row >= height - 1) return;
    float s = 0.0f;
    s += __ldg(&src[(row - 1) * pitch + col - 1]) + __ldg(&src[(row - 1) * pitch + col]) + __ldg(&src[(row - 1) * pitch + col + 1]);
    s += __ldg(&src[row * pitch + col - 1]) + __ldg(&src[row * pitch + col]) + __ldg(&src[row * pitch + col + 1]);
    s += __ldg(&src[(row + 1) * pitch + col - 1]) + __ldg(&src[(row + 1) * pitch + col]) + __ldg(&src[(row + 1) * pitch + col + 1]);
    dst[row * pitch + col] = s * (1.0f / 9.0f);
}

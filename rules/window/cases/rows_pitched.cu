// A horizontal box filter over a pitched image's rows, taps from col - R (the first and last R
// columns are left alone): the window's offset holds the row and a negative constant.
#define R 4

__global__ void hbox(const float* __restrict__ src, float* __restrict__ dst, int width, int height, int pitch)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (col >= R && col < width - R && row < height) {
        float acc = 0.0f;
        for (int k = 0; k <= 2 * R; ++k)
            acc += src[row * pitch + col + k - R];
        dst[row * pitch + col] = acc * (1.0f / (2 * R + 1));
    }
}

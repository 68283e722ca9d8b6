// Gain, bias and clamp over a pitched single-channel image (rows `pitch` elements apart), an early
// return at the edge, an in-place output.
__global__ void contrast_pitched(const float* __restrict__ src, float* __restrict__ dst, int width, int height,
                                 int pitch, float gain, float bias)
{
    const int col = threadIdx.x + blockIdx.x * blockDim.x;
    const int row = threadIdx.y + blockIdx.y * blockDim.y;
    if (col >= width || row >= height) return;
    const float v = src[row * pitch + col];
    dst[row * pitch + col] = 0.5f * dst[row * pitch + col] + 0.5f * fminf(fmaxf(gain * v + bias, 0.0f), 1.0f);
}

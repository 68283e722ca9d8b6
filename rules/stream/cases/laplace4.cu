// A 4-point Jacobi step (no center term) through an index macro: the center row is read by no output of its own.
#define IDX(i, j) ((j) * width + (i))
__global__ void laplace4(const float* in, float* out, int width, int height)
{
    const int i = threadIdx.x + blockIdx.x * blockDim.x;
    const int j = threadIdx.y + blockIdx.y * blockDim.y;
    if (i > 0 && i < width - 1 && j > 0 && j < height - 1) {
        out[IDX(i, j)] = (in[IDX(i - 1, j)] + in[IDX(i + 1, j)] + in[IDX(i, j - 1)] + in[IDX(i, j + 1)]) * 0.25f;
    }
}

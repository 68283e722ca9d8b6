// A transpose whose index takes the block size from a macro (blockIdx.x * TILE + threadIdx.x),
// launched with a grid written with the same macro, as the CUDA samples write it.
#define TILE 16
__global__ void transpose_tile(const float* in, float* out, int rows, int cols)
{
    int c = blockIdx.x * TILE + threadIdx.x;
    int r = blockIdx.y * TILE + threadIdx.y;
    if (r < rows && c < cols)
        out[c * rows + r] = in[r * cols + c];
}

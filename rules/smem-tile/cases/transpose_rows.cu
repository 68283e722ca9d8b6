// The SDK-style transpose with bounds checks: a TILE_DIM x BLOCK_ROWS block walks its
// TILE_DIM x TILE_DIM tile in rows BLOCK_ROWS apart.
#define TILE_DIM 32
#define BLOCK_ROWS 8

__global__ void transpose_rows(float *dst, const float *src, int width, int height)
{
    int col = blockIdx.x * TILE_DIM + threadIdx.x;
    int row = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int r = 0; r < TILE_DIM; r += BLOCK_ROWS)
        if (col < width && row + r < height)
            dst[col * height + (row + r)] = src[(row + r) * width + col];
}

// The SDK-style naive transpose as written: no bounds checks, a grid rounded down to whole tiles, a
// TILE_DIM x BLOCK_ROWS block walking its tile in rows BLOCK_ROWS apart.
#define TILE_DIM 32
#define BLOCK_ROWS 8

__global__ void transpose_rows_naive(float *dst, const float *src, int width, int height)
{
    int col = blockIdx.x * TILE_DIM + threadIdx.x;
    int row = blockIdx.y * TILE_DIM + threadIdx.y;
    int from = row * width + col;
    int to = col * height + row;
    for (int r = 0; r < TILE_DIM; r += BLOCK_ROWS) {
        dst[to + r] = src[from + r * width];
    }
}

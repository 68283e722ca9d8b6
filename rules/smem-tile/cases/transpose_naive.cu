// A transpose as older SDK-era code writes it, with no bounds checks at all: the grid holds whole
// TILE_DIM x TILE_DIM tiles only (its size rounded down), and a TILE_DIM x BLOCK_ROWS block sweeps
// its tile, each thread taking every BLOCK_ROWS-th row of one column.
#define TILE_DIM 32
#define BLOCK_ROWS 8

__global__ void transpose_rows_naive(float *dst, const float *src, int width, int height)
{
    int y = TILE_DIM * blockIdx.y + threadIdx.y;
    int x = TILE_DIM * blockIdx.x + threadIdx.x;
    for (int dy = 0; dy < TILE_DIM; dy += BLOCK_ROWS) {
        int yy = y + dy;
        dst[x * height + yy] = src[yy * width + x];
    }
}

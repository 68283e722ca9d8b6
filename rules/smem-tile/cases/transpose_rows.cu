// The same sweep with every element checked: a TILE_DIM x BLOCK_ROWS block walks its
// TILE_DIM x TILE_DIM tile BLOCK_ROWS rows at a time, and the edge tiles skip what lies outside.
#define TILE_DIM 32
#define BLOCK_ROWS 8

__global__ void transpose_rows(float *dst, const float *src, int width, int height)
{
    const int x = threadIdx.x + blockIdx.x * TILE_DIM;
    const int y = threadIdx.y + blockIdx.y * TILE_DIM;
    for (int dy = 0; dy < TILE_DIM; dy += BLOCK_ROWS) {
        if (y + dy < height && x < width)
            dst[x * height + (y + dy)] = src[(y + dy) * width + x];
    }
}

// The CUDA samples' transpose with bounds checks: a TILE_DIM x BLOCK_ROWS block walks its
// TILE_DIM x TILE_DIM tile in rows BLOCK_ROWS apart.
#define TILE_DIM 32
#define BLOCK_ROWS 8

__global__ void transpose_rows(float *odata, const float *idata, int width, int height)
{
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < width && y + j < height)
            odata[x * height + (y + j)] = idata[(y + j) * width + x];
}

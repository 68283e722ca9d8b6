// The CUDA samples' transposeNaive as written: no bounds checks, a grid rounded down to whole
// tiles, a TILE_DIM x BLOCK_ROWS block walking its tile in rows BLOCK_ROWS apart.
#define TILE_DIM 32
#define BLOCK_ROWS 8

__global__ void transposeNaive(float *odata, const float *idata, int width, int height)
{
    int xIndex = blockIdx.x * TILE_DIM + threadIdx.x;
    int yIndex = blockIdx.y * TILE_DIM + threadIdx.y;
    int index_in = xIndex + width * yIndex;
    int index_out = yIndex + height * xIndex;
    for (int i = 0; i < TILE_DIM; i += BLOCK_ROWS) {
        odata[index_out + i] = idata[index_in + i * width];
    }
}

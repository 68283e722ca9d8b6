// A 4-neighbour average through an index macro that names the column first, ((x) + (nx) * (y)).
#define AT(x, y) ((x) + (nx) * (y))

__global__ void smooth_at(const float* src, float* dst, int nx, int ny)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x > 0 && x < nx - 1 && y > 0 && y < ny - 1)
        dst[AT(x, y)] = 0.25f * (src[AT(x - 1, y)] + src[AT(x + 1, y)] + src[AT(x, y - 1)] + src[AT(x, y + 1)]);
}

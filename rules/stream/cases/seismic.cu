// A 25-point acoustic wave step (radius 4 along each axis, a second-order leapfrog in time) on a
// 3D launch with an early return, the grid's extents as macros and the coefficients in constant
// memory: nine planes of one column are carried.
#ifndef R
#define R 4
#endif
#define AT(x, y, z) (((z) * ny + (y)) * nx + (x))
__constant__ float coef[R + 1] = {-2.847222f, 1.6f, -0.2f, 0.0253968f, -0.0017857f};

__global__ void wave(const float* p, const float* prev, float* next, const float* vel, int nx, int ny, int nz)
{
    const int x = threadIdx.x + blockIdx.x * blockDim.x;
    const int y = threadIdx.y + blockIdx.y * blockDim.y;
    const int z = threadIdx.z + blockIdx.z * blockDim.z;
    if (x < R || y < R || z < R || x >= nx - R || y >= ny - R || z >= nz - R) return;
    float lap = 3.0f * coef[0] * p[AT(x, y, z)]
        + coef[1] * (p[AT(x - 1, y, z)] + p[AT(x + 1, y, z)] + p[AT(x, y - 1, z)] + p[AT(x, y + 1, z)] + p[AT(x, y, z - 1)] + p[AT(x, y, z + 1)])
        + coef[2] * (p[AT(x - 2, y, z)] + p[AT(x + 2, y, z)] + p[AT(x, y - 2, z)] + p[AT(x, y + 2, z)] + p[AT(x, y, z - 2)] + p[AT(x, y, z + 2)])
        + coef[3] * (p[AT(x - 3, y, z)] + p[AT(x + 3, y, z)] + p[AT(x, y - 3, z)] + p[AT(x, y + 3, z)] + p[AT(x, y, z - 3)] + p[AT(x, y, z + 3)])
        + coef[4] * (p[AT(x - 4, y, z)] + p[AT(x + 4, y, z)] + p[AT(x, y - 4, z)] + p[AT(x, y + 4, z)] + p[AT(x, y, z - 4)] + p[AT(x, y, z + 4)]);
    next[AT(x, y, z)] = 2.0f * p[AT(x, y, z)] - prev[AT(x, y, z)] + vel[AT(x, y, z)] * lap;
}

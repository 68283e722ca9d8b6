// An explicit heat-equation step on a 3D grid, one thread per interior point of a 3D launch, the
// index in a local and the plane and row neighbours as offsets from it.
__global__ void heat3d(const float* __restrict__ u, float* __restrict__ un, int nx, int ny, int nz, float c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i > 0 && i < nx - 1 && j > 0 && j < ny - 1 && k > 0 && k < nz - 1) {
        int id = (k * ny + j) * nx + i;
        un[id] = u[id] + c * (u[id - 1] + u[id + 1] + u[id - nx] + u[id + nx]
                              + u[id - nx * ny] + u[id + nx * ny] - 6.0f * u[id]);
    }
}

// A 7-point Jacobi step on a 3D grid as much CPU-ported code writes it: a 2D launch over (i, j),
// each thread walking its column along z in a loop, the index in a local.
__global__ void jacobi3d(const double* __restrict__ u, double* __restrict__ unew, int nx, int ny, int nz)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < 1 || j < 1 || i >= nx - 1 || j >= ny - 1) return;
    for (int k = 1; k < nz - 1; k++) {
        const int c = (k * ny + j) * nx + i;
        unew[c] = (u[c - 1] + u[c + 1] + u[c - nx] + u[c + nx] + u[c - nx * ny] + u[c + nx * ny]) / 6.0;
    }
}

// A fourth-order 9-point star Laplacian in double precision: two cells each way along i and j.
__global__ void star9(const double *u, double *lap, int nx, int ny, double h2inv)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= 2 && i < nx - 2 && j >= 2 && j < ny - 2)
    {
        double c = -60.0 * u[j * nx + i];
        double ew = 16.0 * (u[j * nx + i - 1] + u[j * nx + i + 1]) - (u[j * nx + i - 2] + u[j * nx + i + 2]);
        double ns = 16.0 * (u[(j - 1) * nx + i] + u[(j + 1) * nx + i]) - (u[(j - 2) * nx + i] + u[(j + 2) * nx + i]);
        lap[j * nx + i] = (c + ew + ns) * h2inv / 12.0;
    }
}

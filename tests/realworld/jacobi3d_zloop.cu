// 7-point Jacobi sweep; 2D grid over (x, y), each thread marches along z.
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" __global__ void jacobi3d_sweep(const float* __restrict__ src,
                                          float* __restrict__ dst,
                                          int nx, int ny, int nz)
{
    const int ix = blockIdx.x * blockDim.x + threadIdx.x;
    const int iy = blockIdx.y * blockDim.y + threadIdx.y;
    if (ix < 1 || ix >= nx - 1 || iy < 1 || iy >= ny - 1) return;

    const size_t plane = (size_t)nx * ny;
    for (int iz = 1; iz < nz - 1; ++iz) {
        size_t c = iz * plane + (size_t)iy * nx + ix;
        dst[c] = (src[c - 1] + src[c + 1] + src[c - nx] + src[c + nx]
                  + src[c - plane] + src[c + plane]) * (1.0f / 6.0f);
    }
}

extern "C" void launch_jacobi3d(const float* src, float* dst, int nx, int ny, int nz, cudaStream_t s)
{
    dim3 threads(32, 8);
    dim3 blocks((nx + threads.x - 1) / threads.x, (ny + threads.y - 1) / threads.y);
    jacobi3d_sweep<<<blocks, threads, 0, s>>>(src, dst, nx, ny, nz);
}

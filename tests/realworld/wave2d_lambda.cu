// 2D wave equation leapfrog; index helper as a lambda inside the kernel, and a 2D-flattened 1D launch.
#include <cuda_runtime.h>

__global__ void wave_step(const float *u_prev, const float *u_curr, float *u_next,
                          const float *c2, int nx, int ny, float dt2_dx2)
{
    const int ix = blockIdx.x * blockDim.x + threadIdx.x;
    const int iy = blockIdx.y * blockDim.y + threadIdx.y;
    auto at = [nx](int x, int y) { return y * nx + x; };
    if (ix >= 1 && ix < nx - 1 && iy >= 1 && iy < ny - 1) {
        float lap = u_curr[at(ix - 1, iy)] + u_curr[at(ix + 1, iy)] + u_curr[at(ix, iy - 1)]
                  + u_curr[at(ix, iy + 1)] - 4.0f * u_curr[at(ix, iy)];
        u_next[at(ix, iy)] = 2.0f * u_curr[at(ix, iy)] - u_prev[at(ix, iy)] + c2[at(ix, iy)] * dt2_dx2 * lap;
    }
}

// Same, 1D launch over the flattened grid: x = idx % nx, y = idx / nx.
__global__ void wave_step_flat(const float *u_prev, const float *u_curr, float *u_next,
                               int nx, int ny, float k)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int x = idx % nx;
    int y = idx / nx;
    if (idx < nx * ny && x > 0 && x < nx - 1 && y > 0 && y < ny - 1) {
        u_next[idx] = 2.0f * u_curr[idx] - u_prev[idx]
                    + k * (u_curr[idx - 1] + u_curr[idx + 1] + u_curr[idx - nx] + u_curr[idx + nx] - 4.0f * u_curr[idx]);
    }
}

// Large-grid 1D index: ((blockIdx.y * gridDim.x) + blockIdx.x) * blockDim.x + threadIdx.x
__global__ void scale_biggrid(float *v, float s, unsigned int n)
{
    unsigned int i = (blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) v[i] *= s;
}

// A 2D wave step whose index helper is a lambda inside the kernel.
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

/* Lattice-style 2D Laplace solver: I2D(ni,i,j) addressing, as in many teaching codes. */
#include <stdio.h>
#include <cuda.h>

#define I2D(ni, i, j) (((ni) * (j)) + i)

__global__ void laplace_iter(int ni, int nj, float *t_old, float *t_new)
{
    int i, j;
    int i00, im10, ip10, i0m1, i0p1;

    i = blockIdx.x * blockDim.x + threadIdx.x;
    j = blockIdx.y * blockDim.y + threadIdx.y;

    if (i > 0 && i < ni - 1 && j > 0 && j < nj - 1) {
        i00 = I2D(ni, i, j);
        im10 = I2D(ni, i - 1, j);
        ip10 = I2D(ni, i + 1, j);
        i0m1 = I2D(ni, i, j - 1);
        i0p1 = I2D(ni, i, j + 1);
        t_new[i00] = 0.25f * (t_old[im10] + t_old[ip10] + t_old[i0m1] + t_old[i0p1]);
    }
}

int main(void)
{
    const int ni = 2048, nj = 2048;
    float *t_host, *t_dev_old, *t_dev_new;
    size_t sz = ni * nj * sizeof(float);
    t_host = (float *)malloc(sz);
    for (int k = 0; k < ni * nj; k++) t_host[k] = 0.0f;
    cudaMalloc((void **)&t_dev_old, sz);
    cudaMalloc((void **)&t_dev_new, sz);
    cudaMemcpy(t_dev_old, t_host, sz, cudaMemcpyHostToDevice);
    cudaMemcpy(t_dev_new, t_host, sz, cudaMemcpyHostToDevice);

    int TILE_I = 16, TILE_J = 16;
    dim3 grid(ni / TILE_I, nj / TILE_J);
    dim3 block(TILE_I, TILE_J);
    for (int it = 0; it < 1000; it++) {
        laplace_iter<<<grid, block>>>(ni, nj, t_dev_old, t_dev_new);
        float *tmp = t_dev_old; t_dev_old = t_dev_new; t_dev_new = tmp;
    }
    cudaMemcpy(t_host, t_dev_old, sz, cudaMemcpyDeviceToHost);
    printf("%f\n", t_host[I2D(ni, ni / 2, nj / 2)]);
    return 0;
}

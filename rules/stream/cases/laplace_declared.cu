/* A 2D Laplace step in the older C style: locals declared first, I2D(ni,i,j) addressing. */

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


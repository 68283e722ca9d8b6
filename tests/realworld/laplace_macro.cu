/* A 2D Laplace solver the way lattice teaching codes write it: flat offsets through an index
   macro, every local declared at the top, and a host loop that swaps the two grids each sweep. */
#include <stdio.h>
#include <cuda.h>

#define CELL(nx, x, y) ((nx) * (y) + (x))

__global__ void laplace_iter(int ni, int nj, float *t_old, float *t_new)
{
    int x, y;
    int mid, west, east, south, north;

    x = blockIdx.x * blockDim.x + threadIdx.x;
    y = blockIdx.y * blockDim.y + threadIdx.y;

    if (y > 0 && y < nj - 1 && x > 0 && x < ni - 1) {
        mid = CELL(ni, x, y);
        west = CELL(ni, x - 1, y);
        east = CELL(ni, x + 1, y);
        south = CELL(ni, x, y - 1);
        north = CELL(ni, x, y + 1);
        t_new[mid] = 0.25f * (t_old[west] + t_old[east] + t_old[south] + t_old[north]);
    }
}

int main(void)
{
    const int ni = 2048, nj = 2048, sweeps = 1000;
    const size_t bytes = (size_t)ni * nj * sizeof(float);
    float *field = (float *)calloc((size_t)ni * nj, sizeof(float));
    float *cur, *next;
    cudaMalloc((void **)&cur, bytes);
    cudaMalloc((void **)&next, bytes);
    cudaMemcpy(cur, field, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(next, field, bytes, cudaMemcpyHostToDevice);

    int bx = 16, by = 16;
    dim3 block(bx, by);
    dim3 grid(ni / bx, nj / by);
    for (int s = 0; s < sweeps; s++) {
        laplace_iter<<<grid, block>>>(ni, nj, cur, next);
        float *swap = cur;
        cur = next;
        next = swap;
    }
    cudaMemcpy(field, cur, bytes, cudaMemcpyDeviceToHost);
    printf("centre %f\n", field[CELL(ni, ni / 2, nj / 2)]);
    free(field);
    return 0;
}

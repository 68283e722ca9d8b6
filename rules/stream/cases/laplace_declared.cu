/* One Jacobi sweep of a 2D Laplace problem in the older C style: every local declared at the top
   and assigned later, the flat offsets of a cell and its four neighbours taken from an index macro
   (x runs fastest). */

#define CELL(nx, x, y) ((nx) * (y) + (x))

__global__ void laplace_iter(int ni, int nj, float *t_old, float *t_new)
{
    int x, y;
    int mid, west, east, south, north;

    y = blockIdx.y * blockDim.y + threadIdx.y;
    x = blockIdx.x * blockDim.x + threadIdx.x;

    if (x > 0 && y > 0 && x < ni - 1 && y < nj - 1) {
        mid = CELL(ni, x, y);
        west = CELL(ni, x - 1, y);
        east = CELL(ni, x + 1, y);
        south = CELL(ni, x, y - 1);
        north = CELL(ni, x, y + 1);
        t_new[mid] = 0.25f * (t_old[west] + t_old[east] + t_old[south] + t_old[north]);
    }
}

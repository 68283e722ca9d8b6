/* Jacobi relaxation of a 2D Laplace field in the older C style: all locals declared first and set
   later, the cell and its four neighbours located through an index macro (x is the fast axis), and
   the new value the mean of the two horizontal and the two vertical neighbours. */

#define CELL(nx, x, y) ((nx) * (y) + (x))

__global__ void laplace_iter(int ni, int nj, float *t_old, float *t_new)
{
    int col, row;
    int self, left, right, below, above;
    float across, along;

    row = threadIdx.y + blockIdx.y * blockDim.y;
    col = threadIdx.x + blockIdx.x * blockDim.x;

    if (row >= 1 && row < nj - 1 && col >= 1 && col < ni - 1) {
        left = CELL(ni, col - 1, row);
        right = CELL(ni, col + 1, row);
        below = CELL(ni, col, row - 1);
        above = CELL(ni, col, row + 1);
        self = CELL(ni, col, row);
        across = t_old[left] + t_old[right];
        along = t_old[below] + t_old[above];
        t_new[self] = 0.25f * (across + along);
    }
}

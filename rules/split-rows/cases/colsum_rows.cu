// Column sums of a row-major matrix, one thread per column, leaving early past the last column.
__global__ void colsum_rows(const float* __restrict__ m, float* __restrict__ sums, int rows, int cols)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= cols)
        return;
    float total = 0.0f;
    for (int row = 0; row < rows; ++row) {
        total += m[row * cols + col];
    }
    sums[col] = total / rows;
}

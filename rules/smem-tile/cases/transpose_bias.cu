// out (cols x rows) = transpose of in (rows x cols) plus b, double, read through __ldg.
__global__ void transpose_bias(const double* __restrict__ in, const double* __restrict__ b,
                               double* __restrict__ out, int rows, int cols)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows && col < cols) {
        out[col * rows + row] = __ldg(&in[row * cols + col]) + b[col * rows + row];
    }
}

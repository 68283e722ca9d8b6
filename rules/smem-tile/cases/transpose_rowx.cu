// out (cols x rows) = transpose of in (rows x cols) plus b, the row along x: the store is
// coalesced and the read of `in` is not; b is read at the output's layout.
__global__ void transpose_rowx(const float* in, const float* b, float* out, int rows, int cols)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) {
        out[col * rows + row] = in[row * cols + col] + b[col * rows + row];
    }
}

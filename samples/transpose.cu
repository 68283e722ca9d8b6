// Matrix transpose: out (cols x rows) = transpose of in (rows x cols), both row-major.
__global__ void transpose(const float* in, float* out, int rows, int cols)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) {
        out[col * rows + row] = in[row * cols + col];
    }
}

// y = A x with long rows (16384 columns), one thread per row: each output is a 16384-term
// sequential float sum, whose rounding differs from a reordered sum by more than a tight tolerance.
__global__ void matvec_long(const float* A, const float* x, float* y, int rows, int cols)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float acc = 0.0f;
        for (int j = 0; j < cols; ++j) {
            acc += A[row * cols + j] * x[j];
        }
        y[row] = acc;
    }
}

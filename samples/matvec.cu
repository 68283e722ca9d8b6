// y = A x for a row-major rows x cols matrix, one thread per row.
__global__ void matvec(const float* A, const float* x, float* y, int rows, int cols)
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

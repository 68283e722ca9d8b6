// Row-wise softmax of a rows x cols matrix, one thread per row.
__global__ void softmax(const float* x, float* y, int rows, int cols)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float m = -INFINITY;
        for (int j = 0; j < cols; ++j) {
            m = fmaxf(m, x[row * cols + j]);
        }
        float sum = 0.0f;
        for (int j = 0; j < cols; ++j) {
            sum += expf(x[row * cols + j] - m);
        }
        for (int j = 0; j < cols; ++j) {
            y[row * cols + j] = expf(x[row * cols + j] - m) / sum;
        }
    }
}

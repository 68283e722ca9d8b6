// samples/softmax.cu as older code spells it (cuopt.training.spellings): accumulation into global
// memory, parenthesized guards, counters declared before their loops, post-increments, a macro type.
#define DATA_TYPE float
// Row-wise softmax of a rows x cols matrix, one thread per row.
__global__ void softmax(const DATA_TYPE* x, DATA_TYPE* y, int rows, int cols)
{
    int j;
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        DATA_TYPE m = -INFINITY;
        for (j = 0; j < cols; j++) {
            m = fmaxf(m, x[row * cols + j]);
        }
        DATA_TYPE sum = 0.0f;
        for (j = 0; j < cols; j++) {
            sum += expf(x[row * cols + j] - m);
        }
        for (j = 0; j < cols; j++) {
            y[row * cols + j] = expf(x[row * cols + j] - m) / sum;
        }
    }
}

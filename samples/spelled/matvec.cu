// samples/matvec.cu as older code spells it (cuopt.training.spellings): accumulation into global
// memory, parenthesized guards, counters declared before their loops, post-increments, a macro type.
#define DATA_TYPE float
// y = A x for a row-major rows x cols matrix, one thread per row.
__global__ void matvec(const DATA_TYPE* A, const DATA_TYPE* x, DATA_TYPE* y, int rows, int cols)
{
    int j;
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        y[row] = 0.0f;
        for (j = 0; j < cols; j++) {
            y[row] += A[row * cols + j] * x[j];
        }
    }
}

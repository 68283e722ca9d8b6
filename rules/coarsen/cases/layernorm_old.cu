#define DATA_TYPE float
// layer norm of each row of a rows x cols matrix (DATA_TYPE), one thread per row
__global__ void layernorm_old(const DATA_TYPE* x, const DATA_TYPE* gamma, const DATA_TYPE* beta, DATA_TYPE* y,
                              int rows, int cols, DATA_TYPE eps)
{
    int j;
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    DATA_TYPE mean = 0.0f;
    for (j = 0; j < cols; j++) {
        mean += x[r * cols + j];
    }
    mean /= cols;
    DATA_TYPE var = 0.0f;
    for (j = 0; j < cols; j++) {
        DATA_TYPE d = x[r * cols + j] - mean;
        var += d * d;
    }
    var /= cols;
    DATA_TYPE inv = 1.0f / sqrtf(var + eps);
    for (j = 0; j < cols; j++) {
        y[r * cols + j] = (x[r * cols + j] - mean) * inv * gamma[j] + beta[j];
    }
}

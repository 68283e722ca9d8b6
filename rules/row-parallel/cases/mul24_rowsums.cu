// Row sums indexed through the CUDA samples' IMUL macro (a 24-bit multiply).
#define IMUL(a, b) __mul24(a, b)

__global__ void rowSums(const float *d_In, float *d_Out, int rows, int cols)
{
    const int row = IMUL(blockIdx.x, blockDim.x) + threadIdx.x;
    if (row >= rows)
        return;
    float sum = 0;
    for (int j = 0; j < cols; j++)
        sum += d_In[IMUL(row, cols) + j];
    d_Out[row] = sum;
}

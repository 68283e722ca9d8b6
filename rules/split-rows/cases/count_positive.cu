// Histogram-style feature statistics: how many rows hold a positive value, per column, added to
// running counts kept across batches.
__global__ void count_positive(const float* x, unsigned int* counts, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) {
        unsigned int n = 0u;
        for (int r = 0; r < rows; r++)
            n += x[r * cols + c] > 0.0f ? 1u : 0u;
        counts[c] += n;
    }
}

#include <cstddef>
// A weight-decay style gradient: each column's sum of squares in double, 64-bit indices throughout.
__global__ void colsum_double(const double* g, double* acc, size_t rows, size_t cols)
{
    size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (c < cols) {
        double s = 0.0;
        for (size_t r = 0; r < rows; ++r) {
            const double v = g[r * cols + c];
            s += v * v;
        }
        acc[c] += s;
    }
}

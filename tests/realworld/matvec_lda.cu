// y = A x with a leading dimension, one thread per row; and batched dot products.
#include <cuda_runtime.h>

__global__ void gemv_n(int m, int n, const float *A, int lda, const float *x, float *y)
{
    unsigned int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m) {
        float t = 0.0f;
        for (int j = 0; j < n; j++)
            t += A[row * lda + j] * x[j];
        y[row] = t;
    }
}

// out[b] = dot(u[b, :], v[b, :]) with size_t strides
__global__ void batched_dot(const float *u, const float *v, float *out, size_t batch, size_t dim)
{
    size_t b = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (b < batch) {
        float acc = 0.f;
        const float *ub = &u[b * dim];
        const float *vb = &v[b * dim];
        for (size_t k = 0; k < dim; ++k) acc += ub[k] * vb[k];
        out[b] = acc;
    }
}

// argmax per row (greedy decoding)
__global__ void argmax_rows(const float *logits, int *idx, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        int best = 0;
        float bv = logits[r * cols];
        for (int c = 1; c < cols; ++c) {
            float v = logits[r * cols + c];
            if (v > bv) { bv = v; best = c; }
        }
        idx[r] = best;
    }
}

// Kernels in the styles of several codebases (Rodinia, the CUDA samples, BLAS-like, textbook), one launch each.
#include <cuda_runtime.h>
#include <cstdio>
#define BLOCK_SIZE 256
#define TILE 16

// Rodinia-style: thread index via bx/tx locals, global id computed from them
__global__ void srad_like(float *J, float *C, int rows, int cols, float q0)
{
    int bx = blockIdx.x;
    int tx = threadIdx.x;
    int idx = bx * BLOCK_SIZE + tx;
    if (idx >= rows * cols) return;
    float v = J[idx];
    C[idx] = 1.0f / (1.0f + (v * v - q0) / (q0 * (1.0f + q0)));
}

// CUDA-samples style: unsigned int, early exit, size_t arithmetic
__global__ void scaleVector(float *__restrict__ out, const float *__restrict__ in, float alpha, unsigned int numElements)
{
    const unsigned int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < numElements) {
        out[i] = alpha * in[i];
    }
}

// row-major 2D with pitch in elements, column index from x, do-while-free
__global__ void rowScale(float *M, const float *s, int nrows, int ncols, int ld)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r >= nrows || c >= ncols) return;
    M[r * ld + c] *= s[r];
}

// matrix-vector, one thread per row, sum with a temp and a separate index variable
__global__ void mv_rows(const double *A, const double *x, double *y, int m, int n)
{
    int row = threadIdx.x + blockIdx.x * blockDim.x;
    if (row < m) {
        double sum = 0.0;
        int base = row * n;
        for (int j = 0; j < n; j++) {
            sum += A[base + j] * x[j];
        }
        y[row] = sum;
    }
}

// 1D convolution with constant-sized mask as a template-free #define
#define MASK_W 7
__global__ void conv1d_mask(const float *in, const float *mask, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float acc = 0.0f;
        for (int j = 0; j < MASK_W; j++) {
            int src = i + j - MASK_W / 2;
            if (src >= 0 && src < n)
                acc += mask[j] * in[src];
        }
        out[i] = acc;
    }
}

int main()
{
    int rows = 2048, cols = 2048, n = rows * cols;
    float *J, *C, *o, *in, *mask;
    double *A, *x, *y;
    cudaMalloc(&J, n * sizeof(float)); cudaMalloc(&C, n * sizeof(float));
    cudaMalloc(&o, n * sizeof(float)); cudaMalloc(&in, n * sizeof(float)); cudaMalloc(&mask, MASK_W * sizeof(float));
    cudaMalloc(&A, (size_t)rows * cols * sizeof(double)); cudaMalloc(&x, cols * sizeof(double)); cudaMalloc(&y, rows * sizeof(double));
    srad_like<<<n / BLOCK_SIZE, BLOCK_SIZE>>>(J, C, rows, cols, 0.5f);
    scaleVector<<<(n + 255) / 256, 256>>>(o, in, 2.0f, n);
    dim3 t(TILE, TILE), g((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    rowScale<<<g, t>>>(o, in, rows, cols, cols);
    mv_rows<<<(rows + 127) / 128, 128>>>(A, x, y, rows, cols);
    conv1d_mask<<<(n + 255) / 256, 256>>>(in, mask, o, n);
    cudaDeviceSynchronize();
    return 0;
}

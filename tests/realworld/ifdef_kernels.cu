// Precision and feature switches via the preprocessor.
#include <cstdio>

#ifdef USE_DOUBLE
typedef double real;
#define REAL_ZERO 0.0
#else
typedef float real;
#define REAL_ZERO 0.0f
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 350
#define LDG(p) __ldg(p)
#else
#define LDG(p) (*(p))
#endif

#ifndef NROWS
#define NROWS 16384
#endif
#define NCOLS 4096

// Dense mat-vec, one thread per row.
__global__ void gemv_rows(const real *A, const real *x, real *y)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef BOUNDS_CHECK
    if (row >= NROWS) return;
#else
    if (row < NROWS)
#endif
    {
        real sum = REAL_ZERO;
        for (int col = 0; col < NCOLS; ++col)
            sum += LDG(&A[row * NCOLS + col]) * LDG(&x[col]);
        y[row] = sum;
    }
}

// Transposed mat-vec, one thread per column (coalesced).
__global__ void gemv_cols(const real *A, const real *x, real *y)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col < NCOLS) {
        real sum = REAL_ZERO;
#if 1
        for (int row = 0; row < NROWS; ++row)
            sum += A[row * NCOLS + col] * x[row];
#endif
        y[col] = sum;
    }
}

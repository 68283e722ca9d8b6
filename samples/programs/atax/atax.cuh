/**
 * atax.cuh: y = A^T (A x), sizes and launch shape.
 *
 * Give both sizes together, -DM=... -DN=... (and -DTSTEPS=... for more timed runs), or neither.
 */
#ifndef ATAX_CUH
#define ATAX_CUH

/* A is M x N, x and y have N elements, tmp has M. */
#if !defined(M) && !defined(N) && !defined(TSTEPS)
# define M 8000
# define N 8192
# define TSTEPS 5
#endif

/* Threads per block of both kernels. */
#define DIM_THREAD_BLOCK_X 256

/* Error threshold for the comparison, in percent. */
#define PERCENT_DIFF_ERROR_THRESHOLD 0.5

#ifndef DATA_TYPE
# define DATA_TYPE float
#endif

#endif /* ATAX_CUH */

/**
 * gemm.cuh: C = alpha * A * B + beta * C, sizes and launch shape.
 */
#ifndef GEMM_CUH
#define GEMM_CUH

/* Problem size: A is NI x NK, B is NK x NJ, C is NI x NJ. */
#ifndef NI
#define NI 2048
#endif
#ifndef NJ
#define NJ 2048
#endif
#ifndef NK
#define NK 2048
#endif

/* Thread block dimensions. */
#define DIM_THREAD_BLOCK_X 32
#define DIM_THREAD_BLOCK_Y 8

/* Error threshold for the comparison, in percent. */
#define PERCENT_DIFF_ERROR_THRESHOLD 0.05

/* Can switch DATA_TYPE between float and double. */
typedef float DATA_TYPE;

#define ALPHA 1.5f
#define BETA 1.2f

#endif /* GEMM_CUH */

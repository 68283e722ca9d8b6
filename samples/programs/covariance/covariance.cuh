/**
 * covariance.cuh: sizes and launch shapes of the covariance pipeline.
 */
#ifndef COVARIANCE_CUH
#define COVARIANCE_CUH

/* Problem size: data is N observations (rows) of M variables (columns). */
#ifndef M
#define M 1024
#endif
#ifndef N
#define N 8192
#endif

/* Loop bounds. */
#define BOUND_M M
#define BOUND_N N

#define FLOAT_N ((DATA_TYPE)N)

/* Thread block dimensions of the mean kernel. */
#define DIM_THREAD_BLOCK_KERNEL_1_X 256
#define DIM_THREAD_BLOCK_KERNEL_1_Y 1

/* Thread block dimensions of the centering kernel. */
#define DIM_THREAD_BLOCK_KERNEL_2_X 32
#define DIM_THREAD_BLOCK_KERNEL_2_Y 8

/* Thread block dimensions of the covariance kernel. */
#define DIM_THREAD_BLOCK_KERNEL_3_X 32
#define DIM_THREAD_BLOCK_KERNEL_3_Y 8

/* Error threshold for the comparison, in percent. */
#define PERCENT_DIFF_ERROR_THRESHOLD 0.05

/* Can switch DATA_TYPE between float and double. */
#define DATA_TYPE float

#endif /* COVARIANCE_CUH */

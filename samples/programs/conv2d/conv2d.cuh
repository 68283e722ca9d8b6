/**
 * conv2d.cuh: sizes and launch shape of the 2D convolution.
 */
#ifndef CONV2D_CUH
#define CONV2D_CUH

/* Problem size. */
#ifndef NI
#define NI 10240
#endif
#ifndef NJ
#define NJ 10240
#endif

/* Thread block dimensions. */
#ifndef DIM_THREAD_BLOCK_X
#define DIM_THREAD_BLOCK_X 32
#endif
#ifndef DIM_THREAD_BLOCK_Y
#define DIM_THREAD_BLOCK_Y 8
#endif

/* Error threshold for the comparison, in percent. */
#define PERCENT_DIFF_ERROR_THRESHOLD 0.05

/* Can switch DATA_TYPE between float and double. */
#define DATA_TYPE float

#endif /* CONV2D_CUH */

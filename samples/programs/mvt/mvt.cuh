/**
 * mvt.cuh: matrix-vector product and transpose, sizes and launch shape.
 */
#ifndef MVT_CUH
#define MVT_CUH

/* Problem size: A is N x N. */
#ifndef N
#define N 12288
#endif

/* Thread block dimensions. */
#ifndef DIM_THREAD_BLOCK_X
#define DIM_THREAD_BLOCK_X 256
#endif
#ifndef DIM_THREAD_BLOCK_Y
#define DIM_THREAD_BLOCK_Y 1
#endif

/* Error threshold for the comparison, in percent. */
#define PERCENT_DIFF_ERROR_THRESHOLD 0.05

/* Can switch DATA_TYPE between float and double (-DDATA_TYPE=double). */
#ifndef DATA_TYPE
#define DATA_TYPE float
#endif

#endif /* MVT_CUH */

/**
 * twomm.cuh: two chained matrix products, D = alpha * A * B * C + beta * D.
 *
 * Pick a data set with -DMINI_DATASET, -DSMALL_DATASET or -DLARGE_DATASET (the standard one
 * otherwise), or give every size yourself: -DNI=... -DNJ=... -DNK=... -DNL=...
 */
#ifndef TWOMM_CUH
#define TWOMM_CUH

/* Default to the standard data set. */
#if !defined(MINI_DATASET) && !defined(SMALL_DATASET) && !defined(LARGE_DATASET)
#define STANDARD_DATASET
#endif

/* Problem size: A is NI x NK, B is NK x NJ, C is NJ x NL, D is NI x NL. */
#if !defined(NI) && !defined(NJ) && !defined(NK) && !defined(NL)
# ifdef MINI_DATASET
#  define NI 32
#  define NJ 32
#  define NK 32
#  define NL 32
# endif
# ifdef SMALL_DATASET
#  define NI 128
#  define NJ 128
#  define NK 128
#  define NL 128
# endif
# ifdef STANDARD_DATASET /* Default if unspecified. */
#  define NI 1024
#  define NJ 1024
#  define NK 1024
#  define NL 1024
# endif
# ifdef LARGE_DATASET
#  define NI 2048
#  define NJ 2048
#  define NK 2048
#  define NL 2048
# endif
#endif /* !NI && !NJ && !NK && !NL */

/* Thread block dimensions. */
#define DIM_THREAD_BLOCK_X 32
#define DIM_THREAD_BLOCK_Y 8

/* Error threshold for the comparison, in percent. */
#define PERCENT_DIFF_ERROR_THRESHOLD 0.05

typedef float DATA_TYPE;

#endif /* TWOMM_CUH */

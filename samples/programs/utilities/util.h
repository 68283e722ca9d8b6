/**
 * util.h: helpers shared by the benchmark programs.
 *
 * Timing (wall_time), result comparison (percent_diff, compare_arrays),
 * CUDA error checking (CUDA_CHECK) and deterministic random initialisation.
 *
 * Include with -I <path to utilities>:  #include <util.h>
 */
#ifndef UTIL_H
#define UTIL_H

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstddef>
#include <sys/time.h>

#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                          \
    do {                                                                          \
        cudaError_t err__ = (call);                                               \
        if (err__ != cudaSuccess) {                                               \
            fprintf(stderr, "%s:%d: CUDA error in %s: %s\n", __FILE__, __LINE__, \
                    #call, cudaGetErrorString(err__));                            \
            exit(EXIT_FAILURE);                                                   \
        }                                                                         \
    } while (0)

/* Checks the last launch and waits for it to finish. */
#define CUDA_CHECK_KERNEL()                        \
    do {                                           \
        CUDA_CHECK(cudaGetLastError());            \
        CUDA_CHECK(cudaDeviceSynchronize());       \
    } while (0)

/* Seconds since the epoch, to the microsecond: differences of two calls time a region. */
static inline double wall_time()
{
    struct timeval now;
    if (gettimeofday(&now, NULL) != 0) {
        perror("gettimeofday");
        return 0.0;
    }
    return now.tv_sec + 1e-6 * now.tv_usec;
}

/* How far `got` is from `want`, in percent of `want`; two values both within 0.01 of zero are
   taken as equal (a relative error means nothing there), and a tiny offset keeps a zero `want`
   from dividing by zero. */
static inline double percent_diff(double want, double got)
{
    const double near_zero = 0.01;
    if (fabs(want) < near_zero && fabs(got) < near_zero) {
        return 0.0;
    }
    return 100.0 * fabs(want - got) / fabs(want + 1e-8);
}

/* Number of elements of `gpu` that differ from `ref` by more than `threshold` percent;
   prints the first few and a summary line. */
template <typename T>
static int compare_arrays(const char* name, const T* ref, const T* gpu, size_t n, double threshold)
{
    int fail = 0;
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = percent_diff((double)ref[i], (double)gpu[i]);
        if (d > worst || d != d) {
            worst = d;
        }
        if (d > threshold || d != d) {
            if (fail < 5) {
                fprintf(stderr, "  %s[%zu]: cpu %.8g gpu %.8g (%.4g%%)\n", name, i, (double)ref[i],
                        (double)gpu[i], d);
            }
            fail++;
        }
    }
    printf("%s: non-matching CPU-GPU outputs beyond error threshold of %g percent: %d"
           " (worst %.3g percent)\n", name, threshold, fail, worst);
    return fail;
}

/* Deterministic pseudo-random numbers (a 32-bit LCG), the same on every platform. */
static inline unsigned int lcg_next(unsigned int* state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state;
}

/* Uniform in [0, 1). */
static inline float rand_unit(unsigned int* state)
{
    return (float)(lcg_next(state) >> 8) * (1.0f / 16777216.0f);
}

/* Fills a[0..n) with values uniform in [lo, hi). */
template <typename T>
static void init_random(T* a, size_t n, unsigned int seed, T lo = T(0), T hi = T(1))
{
    unsigned int state = seed;
    for (size_t i = 0; i < n; i++) {
        a[i] = lo + (hi - lo) * (T)rand_unit(&state);
    }
}

/* Allocates n elements on the host or exits with a message. */
template <typename T>
static T* host_alloc(size_t n)
{
    T* p = (T*)malloc(n * sizeof(T));
    if (p == NULL) {
        fprintf(stderr, "out of host memory (%zu bytes)\n", n * sizeof(T));
        exit(EXIT_FAILURE);
    }
    return p;
}

static inline void print_device()
{
    int dev = 0;
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    printf("device %d: %s\n", dev, prop.name);
}

#endif /* UTIL_H */

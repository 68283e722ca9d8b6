#include <cstdio>

// Elementwise clamp with debug printf on out-of-range inputs.
__global__ void clamp_debug(const float *in, float *out, int n, float lo, float hi)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = in[i];
        if (v != v) printf("NaN at %d\n", i);
        out[i] = fminf(fmaxf(v, lo), hi);
    }
}

// Row sums, thread 0 prints a progress line.
__global__ void rowsum_verbose(const float *m, float *s, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r == 0) printf("rowsum_verbose: rows=%d cols=%d\n", rows, cols);
    if (r < rows) {
        float acc = 0.f;
        for (int c = 0; c < cols; ++c) acc += m[r * cols + c];
        s[r] = acc;
    }
}

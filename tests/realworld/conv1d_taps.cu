// 1D convolution with a radius-R filter, boundary handled inside the loop (signal processing style).
#include <cuda_runtime.h>

#define MASK_RADIUS 8
#define MASK_WIDTH (2 * MASK_RADIUS + 1)

__constant__ float d_mask[MASK_WIDTH];

__global__ void conv1d_const(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float sum = 0.0f;
        for (int j = -MASK_RADIUS; j <= MASK_RADIUS; j++) {
            int k = i + j;
            if (k >= 0 && k < n)
                sum += in[k] * d_mask[j + MASK_RADIUS];
        }
        out[i] = sum;
    }
}

// valid-only convolution: out has n - taps + 1 elements; filter in global memory
__global__ void conv1d_valid(const float *x, const float *w, float *y, int n, int taps)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n - taps + 1) {
        float acc = 0.0f;
        for (int j = 0; j < taps; ++j)
            acc += x[i + j] * w[j];
        y[i] = acc;
    }
}

// moving average, window fixed at compile time
#define WIN 16
__global__ void moving_avg(const float *__restrict__ x, float *__restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i + WIN <= n) {
        float s = 0.f;
        #pragma unroll
        for (int j = 0; j < WIN; ++j) s += x[i + j];
        y[i] = s * (1.0f / WIN);
    }
}

#include <cfloat>
#define THREADS 256

// Softmax with a block per row and shared-memory reductions.
__global__ void softmax_block(const float *input, float *output, int N, int C)
{
    __shared__ float red[THREADS];
    const int r = blockIdx.x;
    const float *x = input;
    float mx = -FLT_MAX;
    for (int c = threadIdx.x; c < C; c += blockDim.x)
        mx = fmaxf(mx, x[r * C + c]);
    red[threadIdx.x] = mx;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    mx = red[0];
    __syncthreads();
    float total = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x)
        total += __expf(x[r * C + c] - mx);
    red[threadIdx.x] = total;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    total = red[0];
    for (int c = threadIdx.x; c < C; c += blockDim.x)
        output[r * C + c] = __expf(x[r * C + c] - mx) / total;
}

#define BLOCK 256
// Layer-norm backward, one block per row: the block reduces the row's two means through shared
// memory, then each thread writes its columns' input gradient and adds their weight and bias
// gradients into the shared vectors with atomics.
__global__ void ln_bwd_rows(float* dx, float* dgamma, float* dbeta, const float* dy, const float* x,
                            const float* gamma, const float* mu, const float* inv_std, int N, int D)
{
    __shared__ float red_a[BLOCK];
    __shared__ float red_b[BLOCK];
    int n = blockIdx.x;
    if (n >= N) return;
    const float* dyr = dy + (size_t)n * D;
    const float* xr = x + (size_t)n * D;
    float m = mu[n], is = inv_std[n];
    float a = 0.f, b = 0.f;
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float g = gamma[d] * dyr[d];
        a += g;
        b += g * (xr[d] - m) * is;
    }
    red_a[threadIdx.x] = a;
    red_b[threadIdx.x] = b;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            red_a[threadIdx.x] += red_a[threadIdx.x + s];
            red_b[threadIdx.x] += red_b[threadIdx.x + s];
        }
        __syncthreads();
    }
    a = red_a[0] / D;
    b = red_b[0] / D;
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float xh = (xr[d] - m) * is;
        float g = gamma[d] * dyr[d];
        atomicAdd(&dgamma[d], dyr[d] * xh);
        atomicAdd(&dbeta[d], dyr[d]);
        dx[(size_t)n * D + d] = (g - a - xh * b) * is;
    }
}

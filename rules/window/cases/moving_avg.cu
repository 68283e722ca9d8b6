// A moving average over a window of WIN inputs, guarded as `i + WIN <= n` (the outputs whose window
// fits), the window from a macro.
#define WIN 16
__global__ void moving_avg(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i + WIN <= n) {
        float s = 0.f;
        #pragma unroll
        for (int j = 0; j < WIN; ++j) s += x[i + j];
        y[i] = s * (1.0f / WIN);
    }
}

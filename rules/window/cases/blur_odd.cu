// A 1D blur of odd radius (11 taps from idx - R): the window starts off a multiple of 4, each
// tap's read checked against the array's ends, an early-return guard.
#define R 5

__global__ void blur1d(const float* __restrict__ in, float* __restrict__ out, const float* __restrict__ weights, int n)
{
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n) return;
    float acc = 0.f;
    for (int t = 0; t < 2 * R + 1; ++t) {
        const int src = idx + t - R;
        if (src >= 0 && src < n) acc += weights[t] * in[src];
    }
    out[idx] = acc;
}

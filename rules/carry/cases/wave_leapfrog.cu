// One leapfrog step of a 1D wave equation, each thread a strip of points walked by a loop, the
// fourth-order Laplacian read through an accessor macro at i - 2 .. i + 2.
#define U(i) u0[(i)]
__global__ void wave_strip(const float* u0, const float* u1, float* u2, int n, int strip, float c2)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int lo = 2 + t * strip;
    if (lo >= n - 2) return;
    int hi = min(lo + strip, n - 2);
    for (int i = lo; i < hi; i++) {
        float lap = -U(i - 2) + 16.0f * U(i - 1) - 30.0f * U(i) + 16.0f * U(i + 1) - U(i + 2);
        u2[i] = 2.0f * U(i) - u1[i] + c2 * lap / 12.0f;
    }
}

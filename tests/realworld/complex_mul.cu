// Pointwise complex multiply for FFT convolution (the style of the FFT samples; no cuFFT needed here).
#include <cuda_runtime.h>

namespace fftconv {

typedef float2 Complex;

static __device__ __host__ inline Complex ComplexMul(Complex a, Complex b)
{
    Complex c;
    c.x = a.x * b.x - a.y * b.y;
    c.y = a.x * b.y + a.y * b.x;
    return c;
}

static __device__ __host__ inline Complex ComplexScale(Complex a, float s)
{
    Complex c;
    c.x = s * a.x;
    c.y = s * a.y;
    return c;
}

// a[i] = a[i] * b[i] * scale
__global__ void ComplexPointwiseMulAndScale(Complex *a, const Complex *b, int size, float scale)
{
    const int numThreads = blockDim.x * gridDim.x;
    const int threadID = blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = threadID; i < size; i += numThreads) {
        a[i] = ComplexScale(ComplexMul(a[i], b[i]), scale);
    }
}

// out[i] = conj(a[i]) * b[i], one thread per element.
__global__ void conj_mul(const float2 *a, const float2 *b, float2 *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float2 x = a[i], y = b[i];
        out[i] = make_float2(x.x * y.x + x.y * y.y, x.x * y.y - x.y * y.x);
    }
}

}  // namespace fftconv

void pointwise(float2 *a, const float2 *b, float2 *out, int n)
{
    fftconv::ComplexPointwiseMulAndScale<<<32, 256>>>(a, b, n, 1.0f / n);
    fftconv::conj_mul<<<(n + 255) / 256, 256>>>(a, b, out, n);
}

// Pointwise complex products for an FFT convolution, in the style of FFT sample code (no cuFFT
// needed here): a typedef'd complex type with inline helpers, and plain float2.
#include <cuda_runtime.h>

namespace fftconv {

typedef float2 cplx;

static __device__ __host__ inline cplx cmul(cplx p, cplx q)
{
    return make_float2(p.x * q.x - p.y * q.y, p.x * q.y + p.y * q.x);
}

static __device__ __host__ inline cplx cscale(cplx p, float k)
{
    return make_float2(k * p.x, k * p.y);
}

// The spectra's product for an FFT convolution, in place and normalized, over a fixed-size grid.
__global__ void spectrum_mul_scale(cplx *sig, const cplx *filt, int count, float norm)
{
    const int stride = gridDim.x * blockDim.x;
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < count; k += stride)
        sig[k] = cscale(cmul(sig[k], filt[k]), norm);
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
    fftconv::spectrum_mul_scale<<<32, 256>>>(a, b, n, 1.0f / n);
    fftconv::conj_mul<<<(n + 255) / 256, 256>>>(a, b, out, n);
}

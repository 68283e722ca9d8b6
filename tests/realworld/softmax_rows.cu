// Row softmax / log-softmax over the last dim, one thread per row (int64 offsets).
#include <cstdint>
#include <cfloat>
#include <cmath>

__global__ void softmax_lastdim(const float* __restrict__ input, float* __restrict__ output,
                                int64_t outer, int64_t dim)
{
    int64_t row = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (row >= outer) return;
    const float* in_row = input + row * dim;
    float* out_row = output + row * dim;

    float max_val = -FLT_MAX;
    for (int64_t j = 0; j < dim; ++j)
        max_val = fmaxf(max_val, in_row[j]);

    float sum = 0.f;
    for (int64_t j = 0; j < dim; ++j) {
        float e = __expf(in_row[j] - max_val);
        out_row[j] = e;
        sum += e;
    }
    float inv = 1.f / sum;
    for (int64_t j = 0; j < dim; ++j)
        out_row[j] *= inv;
}

// log_softmax with int indices and a row pointer
__global__ void log_softmax_rows(const float *x, float *y, int N, int C)
{
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n < N) {
        const float *xr = x + n * C;
        float m = xr[0];
        for (int c = 1; c < C; c++) m = max(m, xr[c]);
        float s = 0;
        for (int c = 0; c < C; c++) s += expf(xr[c] - m);
        float lse = m + logf(s);
        for (int c = 0; c < C; c++) y[n * C + c] = xr[c] - lse;
    }
}

void launch_softmax(const float *in, float *out, int64_t outer, int64_t dim)
{
    int threads = 128;
    int blocks = (int)((outer + threads - 1) / threads);
    softmax_lastdim<<<blocks, threads>>>(in, out, outer, dim);
}

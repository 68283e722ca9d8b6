// Mixed-precision row statistics as training code writes them: bf16 storage behind a floatX
// typedef, fp32 accumulators, one thread per row.
#include <cuda_bf16.h>

typedef __nv_bfloat16 floatX;

__global__ void row_mean_sq(const floatX* x, float* out, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float acc = 0.0f;
        for (int c = 0; c < cols; ++c) {
            float v = (float)x[r * cols + c];
            acc += v * v;
        }
        out[r] = acc / cols;
    }
}

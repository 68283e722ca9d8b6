// samples/stencil2d.cu as older code spells it (cuopt.training.spellings): accumulation into global
// memory, parenthesized guards, counters declared before their loops, post-increments, a macro type.
#define DATA_TYPE float
// Five-point Jacobi stencil on a w x h grid; border cells are left untouched.
__global__ void stencil2d(const DATA_TYPE* in, DATA_TYPE* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if ((x >= 1) && (x < w - 1) && (y >= 1) && (y < h - 1)) {
        out[y * w + x] = 0.2f * (in[y * w + x] + in[y * w + x - 1] + in[y * w + x + 1]
                                 + in[(y - 1) * w + x] + in[(y + 1) * w + x]);
    }
}

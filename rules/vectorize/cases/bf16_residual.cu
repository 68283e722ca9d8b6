// A residual add and a scale in bf16, one element per thread (llm.c style).
#include <cuda_bf16.h>

__global__ void residual_scale(__nv_bfloat16* out, const __nv_bfloat16* inp1, const __nv_bfloat16* inp2,
                               __nv_bfloat16 scale, int N)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < N) {
        out[idx] = __hmul(__float2bfloat16(__bfloat162float(inp1[idx]) + __bfloat162float(inp2[idx])), scale);
    }
}

// Per-thread partial sums of squares over a grid-stride loop, one atomic per thread (a capped grid).
__global__ void partials(const float* in, float* out, int n)
{
    float s = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        s += in[i] * in[i];
    atomicAdd(out, s);
}

// Row sums and maxima kept through a helper that takes pointers to the running values (C style).
__device__ void accumulate(float* sum, float* top, float v)
{
    *sum += v;
    *top = fmaxf(*top, v);
}

__global__ void row_sum_max(const float* x, float* sums, float* tops, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float s = 0.0f, t = -INFINITY;
        for (int c = 0; c < cols; ++c)
            accumulate(&s, &t, x[(size_t)r * cols + c]);
        sums[r] = s;
        tops[r] = t;
    }
}

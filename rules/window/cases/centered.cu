// A centered stencil of radius r (2r + 1 weights): the border r cells on each side are not written.
__global__ void centered(const float* x, const float* w, float* y, int n, int r)
{
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i >= r && i < n - r)
    {
        float acc = 0.0f;
        for (int j = -r; j <= r; ++j)
            acc += w[j + r] * x[j + i];
        y[i] = acc;
    }
}

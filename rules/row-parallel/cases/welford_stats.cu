// Per-row mean and inverse deviation in one pass: Welford's update counted by the loop (d / (c + 1)).
__global__ void welford_stats(const float* x, float* mean, float* rstd, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float m = 0.0f, m2 = 0.0f;
    for (int c = 0; c < cols; c++) {
        float v = x[r * cols + c];
        float d = v - m;
        m += d / (c + 1);
        m2 += d * (v - m);
    }
    mean[r] = m;
    rstd[r] = rsqrtf(m2 / cols + 1e-5f);
}

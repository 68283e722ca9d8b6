// The largest scaled entry of each column below its first row (the first row seeds the maximum).
__global__ void colmax_scaled(const float *a, const float *scale, float *best, int n, int m)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < m) {
        float hi = a[j] * scale[j];
        for (int i = 1; i < n; i++) {
            float v = a[i * m + j] * scale[j];
            hi = fmaxf(hi, v);
        }
        best[j] = hi;
    }
}

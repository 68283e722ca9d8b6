// Row mean and variance by Welford's update through a helper with reference parameters, as layer
// norms of several libraries write it (a float count), one thread per row.
__device__ void welford_update(float v, float& mean, float& m2, float& count)
{
    count += 1.0f;
    float delta = v - mean;
    mean += delta / count;
    m2 += delta * (v - mean);
}

__global__ void row_stats(const float* x, float* mean_out, float* var_out, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float mean = 0.0f, m2 = 0.0f, count = 0.0f;
    for (int c = 0; c < cols; ++c)
        welford_update(x[r * cols + c], mean, m2, count);
    mean_out[r] = mean;
    var_out[r] = m2 / count;
}

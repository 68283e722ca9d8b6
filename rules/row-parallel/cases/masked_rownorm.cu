// The L2 norm of each row, one thread per row, rows masked out (padding) leaving early with a zero:
// the early return depends only on the row, so a row's whole team leaves together.
__global__ void masked_rownorm(const float* x, const int* mask, float* norms, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    if (mask[r] == 0) {
        norms[r] = 0.0f;
        return;
    }
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += x[r * cols + c] * x[r * cols + c];
    norms[r] = sqrtf(s);
}

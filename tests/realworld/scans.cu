// Prefix sums: per-row cumsum (one thread per row), a Hillis-Steele block scan and a naive scan.
__global__ void cumsum_rows(const float *x, float *y, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float run = 0.f;
        for (int c = 0; c < cols; ++c) {
            run += x[r * cols + c];
            y[r * cols + c] = run;
        }
    }
}

// Exclusive scan of one block's n ints, Hillis-Steele: the two halves of a dynamic shared buffer
// take turns as the step's source and destination.
__global__ void block_scan_exclusive(const int *in, int *out, int n)
{
    extern __shared__ int buf[];
    int t = threadIdx.x;
    int dst = 0, src = 1;
    buf[dst * n + t] = t == 0 ? 0 : in[t - 1];
    __syncthreads();
    for (int step = 1; step < n; step <<= 1) {
        src = dst;
        dst = 1 - dst;
        if (t < step)
            buf[dst * n + t] = buf[src * n + t];
        else
            buf[dst * n + t] = buf[src * n + t - step] + buf[src * n + t];
        __syncthreads();
    }
    out[t] = buf[dst * n + t];
}

// naive O(n^2) inclusive scan, one thread per output
__global__ void scan_naive(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = 0.f;
        for (int j = 0; j <= i; ++j) s += in[j];
        out[i] = s;
    }
}

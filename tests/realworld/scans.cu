// Prefix sums: per-row cumsum (one thread per row) and a Hillis-Steele block scan.
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

__global__ void scan_hillis_steele(const int *in, int *out, int n)
{
    extern __shared__ int temp[];
    int thid = threadIdx.x;
    int pout = 0, pin = 1;
    temp[pout * n + thid] = (thid > 0) ? in[thid - 1] : 0;
    __syncthreads();
    for (int offset = 1; offset < n; offset *= 2) {
        pout = 1 - pout;
        pin = 1 - pout;
        if (thid >= offset)
            temp[pout * n + thid] = temp[pin * n + thid] + temp[pin * n + thid - offset];
        else
            temp[pout * n + thid] = temp[pin * n + thid];
        __syncthreads();
    }
    out[thid] = temp[pout * n + thid];
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

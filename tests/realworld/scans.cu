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

// Exclusive scan of one block's n ints by doubling distances (Hillis-Steele): a dynamic shared
// buffer of 2n ints holds two copies, and each round reads the copy the previous round wrote.
__global__ void block_scan_exclusive(const int *in, int *out, int n)
{
    extern __shared__ int buf[];
    const int me = threadIdx.x;
    int *cur = buf, *nxt = buf + n;
    cur[me] = me > 0 ? in[me - 1] : 0;
    __syncthreads();
    for (int dist = 1; dist < n; dist *= 2) {
        int v = cur[me];
        if (me >= dist)
            v += cur[me - dist];
        nxt[me] = v;
        __syncthreads();
        int *t = cur;
        cur = nxt;
        nxt = t;
    }
    out[me] = cur[me];
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

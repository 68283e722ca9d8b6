// CSR SpMV, a thread per row (the scalar kernel): each row's extent comes from the row offsets, so
// its trip count depends on the data.
__global__ void csr_matvec_rows(int num_rows, const int *offsets, const int *cols,
                                const float *vals, const float *x, float *y)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < num_rows) {
        int begin = offsets[r];
        int end = offsets[r + 1];
        float acc = 0.0f;
        for (int k = begin; k < end; k++)
            acc += vals[k] * x[cols[k]];
        y[r] = acc;
    }
}

// ELL format, column-major storage: coalesced already
__global__ void spmv_ell(int num_rows, int max_nnz, const int *cols, const float *vals, const float *x, float *y)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < num_rows) {
        float dot = 0.0f;
        for (int n = 0; n < max_nnz; n++) {
            int col = cols[n * num_rows + row];
            float v = vals[n * num_rows + row];
            if (v != 0.0f) dot += v * x[col];
        }
        y[row] = dot;
    }
}

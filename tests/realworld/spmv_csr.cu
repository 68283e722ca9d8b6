// CSR SpMV, scalar kernel (one thread per row): irregular, data-dependent bounds.
__global__ void spmv_csr_scalar(int num_rows, const int *row_ptr, const int *col_idx,
                                const float *vals, const float *x, float *y)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < num_rows) {
        float dot = 0.0f;
        int row_start = row_ptr[row];
        int row_end = row_ptr[row + 1];
        for (int jj = row_start; jj < row_end; jj++)
            dot += vals[jj] * x[col_idx[jj]];
        y[row] = dot;
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

// Greedy decoding: the first column of each row's largest logit, one thread per row.
__global__ void argmax_rows(const float* logits, int* idx, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        int best = 0;
        float bv = logits[r * cols];
        for (int c = 1; c < cols; ++c) {
            float v = logits[r * cols + c];
            if (v > bv) { bv = v; best = c; }
        }
        idx[r] = best;
    }
}

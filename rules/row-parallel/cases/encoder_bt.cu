// An embedding sum as small training code writes it: the (sequence, position) pair split from one
// index with / and %, a token id choosing a row of the token table through a local pointer, the
// position's row through another.
__global__ void encoder_bt(float* emb, const int* tokens, const float* tok_table, const float* pos_table,
                           int B, int T, int C)
{
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    int pairs = B * T;
    if (n < pairs) {
        int seq = n / T;
        int pos = n % T;
        int id = tokens[seq * T + pos];
        const float* tok_row = tok_table + id * C;
        const float* pos_row = pos_table + pos * C;
        float* dst = emb + seq * T * C + pos * C;
        for (int c = 0; c < C; c++) {
            dst[c] = pos_row[c] + tok_row[c];
        }
    }
}

// llm.c-style embedding: the (b, t) pair split from one index with / and %, a token id choosing a
// row of the token table through a local pointer, the position's row through another.
__global__ void encoder_bt(float* out, const int* inp, const float* wte, const float* wpe, int B, int T, int C)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int N = B * T;
    if (idx < N) {
        int b = idx / T;
        int t = idx % T;
        float* out_bt = out + b * T * C + t * C;
        int ix = inp[b * T + t];
        const float* wte_ix = wte + ix * C;
        const float* wpe_t = wpe + t * C;
        for (int i = 0; i < C; i++) {
            out_bt[i] = wte_ix[i] + wpe_t[i];
        }
    }
}

// An embedding lookup, one block row per token: every lane of a vector shares tokens[t].
__global__ void embedding_fwd(const int *tokens, const float *table, float *out, int T, int D)
{
    int d = blockIdx.x * blockDim.x + threadIdx.x;
    int t = blockIdx.y;
    if (d < D && t < T)
        out[t * D + d] = table[tokens[t] * D + d];
}

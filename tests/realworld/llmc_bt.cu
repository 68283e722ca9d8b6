// GPT-style training kernels: the (B, T) grid of tokens flattened into one index and split again
// with / and %, as small language-model code bases write them.
#include <cuda_runtime.h>
#include <math.h>

// Token and position embeddings summed: a thread per (sequence, position) pair, which it recovers
// from its flat index to find the two table rows it reads and the output row it writes.
__global__ void embed_tokens_kernel(float* out, const int* tokens, const float* tok_table, const float* pos_table,
                                    int B, int T, int C) {
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    int pairs = B * T;
    if (n < pairs) {
        int seq = n / T;
        int pos = n % T;
        int id = tokens[seq * T + pos];
        const float* tok_row = tok_table + id * C;
        const float* pos_row = pos_table + pos * C;
        float* dst = out + seq * T * C + pos * C;
        for (int c = 0; c < C; c++) {
            dst[c] = pos_row[c] + tok_row[c];
        }
    }
}

// Negative log-likelihood of each position's label under its row of probabilities.
__global__ void token_nll_kernel(float* losses, const float* probs, const int* labels,
                                 int B, int T, int V) {
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n < B * T) {
        int seq = n / T;
        int pos = n % T;
        const float* p = probs + seq * T * V + pos * V;
        int label = labels[seq * T + pos];
        losses[seq * T + pos] = -logf(p[label]);
    }
}

__global__ void bias_add_bt(float* out, const float* bias, int B, int T, int OC) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < B * T * OC) {
        int bt = idx / OC;
        int oc = idx % OC;
        out[bt * OC + oc] += bias[oc];
    }
}

int main() {
    int B = 8, T = 1024, C = 768, V = 50257;
    float *out, *tok_table, *pos_table, *losses, *probs, *bias;
    int *tokens, *labels;
    cudaMalloc(&out, B * T * C * sizeof(float));
    cudaMalloc(&tokens, B * T * sizeof(int));
    cudaMalloc(&tok_table, V * C * sizeof(float));
    cudaMalloc(&pos_table, T * C * sizeof(float));
    cudaMalloc(&losses, B * T * sizeof(float));
    cudaMalloc(&probs, (size_t)B * T * V * sizeof(float));
    cudaMalloc(&labels, B * T * sizeof(int));
    cudaMalloc(&bias, C * sizeof(float));
    const int block_size = 256;
    const int N = B * T;
    const int grid_size = (N + block_size - 1) / block_size;
    embed_tokens_kernel<<<grid_size, block_size>>>(out, tokens, tok_table, pos_table, B, T, C);
    token_nll_kernel<<<grid_size, block_size>>>(losses, probs, labels, B, T, V);
    bias_add_bt<<<(B * T * C + block_size - 1) / block_size, block_size>>>(out, bias, B, T, C);
    cudaDeviceSynchronize();
    return 0;
}

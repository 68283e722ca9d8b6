// llm.c-style kernels: (B, T) flattened into one index and split again with / and %.
#include <cuda_runtime.h>
#include <math.h>

__global__ void encoder_forward_kernel1(float* out, const int* inp, const float* wte, const float* wpe,
                                        int B, int T, int C) {
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

__global__ void crossentropy_forward_kernel1(float* losses, const float* probs, const int* targets,
                                             int B, int T, int V) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < B * T) {
        int b = i / T;
        int t = i % T;
        const float* probs_bt = probs + b * T * V + t * V;
        int ix = targets[b * T + t];
        losses[b * T + t] = -logf(probs_bt[ix]);
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
    float *out, *wte, *wpe, *losses, *probs, *bias;
    int *inp, *targets;
    cudaMalloc(&out, B * T * C * sizeof(float));
    cudaMalloc(&inp, B * T * sizeof(int));
    cudaMalloc(&wte, V * C * sizeof(float));
    cudaMalloc(&wpe, T * C * sizeof(float));
    cudaMalloc(&losses, B * T * sizeof(float));
    cudaMalloc(&probs, (size_t)B * T * V * sizeof(float));
    cudaMalloc(&targets, B * T * sizeof(int));
    cudaMalloc(&bias, C * sizeof(float));
    const int block_size = 256;
    const int N = B * T;
    const int grid_size = (N + block_size - 1) / block_size;
    encoder_forward_kernel1<<<grid_size, block_size>>>(out, inp, wte, wpe, B, T, C);
    crossentropy_forward_kernel1<<<grid_size, block_size>>>(losses, probs, targets, B, T, V);
    bias_add_bt<<<(B * T * C + block_size - 1) / block_size, block_size>>>(out, bias, B, T, C);
    cudaDeviceSynchronize();
    return 0;
}

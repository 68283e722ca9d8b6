// llm.c-style layer norm, matmul with an optional bias, GELU and residual kernels; the host names
// its dim3 variables gridDim and blockDim, as llm.c does.
#include <cuda_runtime.h>
#include <math.h>

__global__ void layernorm_forward_kernel1(float* out, float* mean, float* rstd,
                                          const float* inp, const float* weight, const float* bias,
                                          int N, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    float eps = 1e-5f;
    if (idx < N) {
        const float* x = inp + idx * C;
        float m = 0.0f;
        for (int i = 0; i < C; i++) {
            m += x[i];
        }
        m = m / C;
        float v = 0.0f;
        for (int i = 0; i < C; i++) {
            float xshift = x[i] - m;
            v += xshift * xshift;
        }
        v = v / C;
        float s = 1.0f / sqrtf(v + eps);
        float* out_idx = out + idx * C;
        for (int i = 0; i < C; i++) {
            float n = (s * (x[i] - m));
            float o = n * weight[i] + bias[i];
            out_idx[i] = o;
        }
        mean[idx] = m;
        rstd[idx] = s;
    }
}

__global__ void matmul_forward_kernel1(float* out, const float* inp, const float* weight, const float* bias,
                                       int BT, int C, int OC) {
    int bt = blockIdx.x * blockDim.x + threadIdx.x;
    int oc = blockIdx.y * blockDim.y + threadIdx.y;
    if (bt < BT && oc < OC) {
        float val = (bias != NULL) ? bias[oc] : 0.0f;
        const float* wrow = weight + oc * C;
        const float* inp_bt = inp + bt * C;
        for (int i = 0; i < C; i++) {
            val += inp_bt[i] * wrow[i];
        }
        out[bt * OC + oc] = val;
    }
}

#define GELU_SCALING_FACTOR sqrtf(2.0f / M_PI)
__global__ void gelu_forward_kernel(float* out, const float* inp, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float xi = inp[i];
        float cube = 0.044715f * xi * xi * xi;
        out[i] = 0.5f * xi * (1.0f + tanhf(GELU_SCALING_FACTOR * (xi + cube)));
    }
}

__global__ void residual_forward_kernel(float* out, const float* inp1, const float* inp2, int N) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < N) {
        out[idx] = inp1[idx] + inp2[idx];
    }
}

int main() {
    int B = 8, T = 1024, C = 768, OC = 3072;
    int N = B * T;
    float *out, *mean, *rstd, *inp, *weight, *bias, *mout, *w2, *b2, *g;
    cudaMalloc(&out, N * C * sizeof(float));
    cudaMalloc(&mean, N * sizeof(float));
    cudaMalloc(&rstd, N * sizeof(float));
    cudaMalloc(&inp, N * C * sizeof(float));
    cudaMalloc(&weight, C * sizeof(float));
    cudaMalloc(&bias, C * sizeof(float));
    cudaMalloc(&mout, N * OC * sizeof(float));
    cudaMalloc(&w2, OC * C * sizeof(float));
    cudaMalloc(&b2, OC * sizeof(float));
    cudaMalloc(&g, N * C * sizeof(float));
    const int block_size = 256;
    layernorm_forward_kernel1<<<(N + block_size - 1) / block_size, block_size>>>(out, mean, rstd, inp, weight, bias, N, C);
    dim3 gridDim((N + 7) / 8, (OC + 31) / 32);
    dim3 blockDim(8, 32);
    matmul_forward_kernel1<<<gridDim, blockDim>>>(mout, out, w2, b2, N, C, OC);
    gelu_forward_kernel<<<(N * C + block_size - 1) / block_size, block_size>>>(g, out, N * C);
    residual_forward_kernel<<<(N * C + block_size - 1) / block_size, block_size>>>(g, out, inp, N * C);
    cudaDeviceSynchronize();
    return 0;
}

// A training step as whole programs write one: sizes read at run time, hyperparameters through
// default arguments and launch helpers, a grid over B * NH rows, one template kernel.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void adam_step(float* param, const float* grad, float* m, float lr, float beta1, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        m[i] = beta1 * m[i] + (1.0f - beta1) * grad[i];
        param[i] -= lr * m[i];
    }
}

__global__ void row_softmax(float* out, const float* in, int rows, int cols) {
    int row = blockIdx.y;
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows && c < cols) {
        float mx = -1e30f;
        for (int k = 0; k < cols; k++) mx = fmaxf(mx, in[row * cols + k]);
        float sum = 0.0f;
        for (int k = 0; k < cols; k++) sum += expf(in[row * cols + k] - mx);
        out[row * cols + c] = expf(in[row * cols + c] - mx) / sum;
    }
}

template <typename T, int BLOCK>
__global__ void scale(T* x, T s, int n) {
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) x[i] *= s;
}

// the bias is read only, but the program passes it aliased with the output of an earlier step
__global__ void bias_add(float* out, float* bias, int n, int c) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] += bias[i % c];
}

__global__ void zero_rows(float* x) {
    x[blockIdx.x * blockDim.x + threadIdx.x] = 0.0f;
}

void zero(float* x, int rows) {
    zero_rows<<<rows, 128>>>(x);
}

void adam(float* p, const float* g, float* m, int n, float lr = 1e-3f, float beta1 = 0.9f) {
    int num_blocks = (n + 255) / 256;
    adam_step<<<num_blocks, 256>>>(p, g, m, lr, beta1, n);
}

int main(int argc, char** argv) {
    int B = atoi(argv[1]), NH = atoi(argv[2]), T = atoi(argv[3]);
    int n = B * NH * T;
    float *p, *g, *m, *att, *probs;
    cudaMalloc(&p, n * sizeof(float));
    cudaMalloc(&g, n * sizeof(float));
    cudaMalloc(&m, n * sizeof(float));
    cudaMalloc(&att, B * NH * T * sizeof(float));
    cudaMalloc(&probs, B * NH * T * sizeof(float));
    adam(p, g, m, n, 3e-4f);
    dim3 grid((T + 31) / 32, B * NH);
    row_softmax<<<grid, 32>>>(probs, att, B * NH, T);
    scale<float, 128><<<(n + 127) / 128, 128>>>(p, 0.5f, n);
    bias_add<<<(n + 255) / 256, 256>>>(p, g, n, T);
    zero(m, n / 128);
    cudaDeviceSynchronize();
    printf("done\n");
    return 0;
}

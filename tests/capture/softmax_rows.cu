// Row-wise softmax over logits, launched with sizes read at run time.
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void softmax_rows(float* out, const float* logits, int rows, int cols) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        const float* x = logits + row * cols;
        float mx = x[0];
        for (int k = 1; k < cols; k++) mx = fmaxf(mx, x[k]);
        float sum = 0.0f;
        for (int k = 0; k < cols; k++) sum += expf(x[k] - mx);
        for (int k = 0; k < cols; k++) out[row * cols + k] = expf(x[k] - mx) / sum;
    }
}

int main(int argc, char** argv) {
    int rows = atoi(argv[1]), cols = atoi(argv[2]);
    float *out, *logits;
    cudaMalloc(&out, rows * cols * sizeof(float));
    cudaMalloc(&logits, rows * cols * sizeof(float));
    softmax_rows<<<(rows + 127) / 128, 128>>>(out, logits, rows, cols);
    cudaDeviceSynchronize();
    return 0;
}

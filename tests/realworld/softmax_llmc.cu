// Row softmax the way reference kernels of training code write it: a thread per row, an error-check
// macro around every runtime call.
#include <cuda_runtime.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static void check_cuda(cudaError_t status, const char *where, int line)
{
    if (status == cudaSuccess)
        return;
    fprintf(stderr, "%s:%d: CUDA call failed: %s\n", where, line, cudaGetErrorString(status));
    exit(EXIT_FAILURE);
}
#define CUDA_TRY(call) check_cuda((call), __FILE__, __LINE__)

// Softmax of each row of an (N, C) matrix, a thread per row: the row's maximum, its exponentials
// stored and summed in double precision, then each one divided by that sum.
__global__ void row_softmax_naive(float* probs, const float* logits, int N, int C) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < N) {
        const float* in = logits + r * C;
        float* p = probs + r * C;

        float hi = -INFINITY;
        for (int c = 0; c < C; c++) {
            if (in[c] > hi) {
                hi = in[c];
            }
        }
        double total = 0.0;
        for (int c = 0; c < C; c++) {
            p[c] = expf(in[c] - hi);
            total += p[c];
        }
        for (int c = 0; c < C; c++) {
            p[c] = p[c] / (float)total;
        }
    }
}

// the row maxima alone, written with a ternary
__global__ void row_max(const float* inp, float* maxes, int N, int C) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    float m = -FLT_MAX;
    for (int j = 0; j < C; ++j) {
        float v = inp[i * C + j];
        m = v > m ? v : m;
    }
    maxes[i] = m;
}

int main(int argc, char** argv) {
    int N = 8 * 1024;
    int C = 4096;
    float* d_probs;
    float* d_logits;
    float* d_rowmax;
    CUDA_TRY(cudaMalloc(&d_probs, N * C * sizeof(float)));
    CUDA_TRY(cudaMalloc(&d_logits, N * C * sizeof(float)));
    CUDA_TRY(cudaMalloc(&d_rowmax, N * sizeof(float)));
    int block_size = 128;
    int grid_size = (N + block_size - 1) / block_size;
    row_softmax_naive<<<grid_size, block_size>>>(d_probs, d_logits, N, C);
    row_max<<<grid_size, block_size>>>(d_logits, d_rowmax, N, C);
    CUDA_TRY(cudaGetLastError());
    CUDA_TRY(cudaDeviceSynchronize());
    return 0;
}

// Dot products and norms accumulated with atomicAdd.
#include <cuda_runtime.h>
#include <cstdio>

#define N (1 << 24)
#define THREADS 256

__global__ void dot_atomic(const float *a, const float *b, float *result, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(result, a[i] * b[i]);
}

// grid-stride partial in a register, then one atomic per thread
__global__ void sumsq_gridstride(const double *x, double *out, size_t n)
{
    double local = 0.0;
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        local += x[i] * x[i];
    atomicAdd(out, local);
}

// a dot product written with while loops only, as introductory CUDA books write them: each thread
// strides through the vectors, the block halves its partial sums in shared memory until one is
// left, and that one is added to the result atomically
__global__ void dot_block_tree(const float *a, const float *b, float *c, int n)
{
    __shared__ float partial[THREADS];
    const int lane = threadIdx.x;
    float mine = 0;
    int k = lane + blockDim.x * blockIdx.x;
    while (k < n) {
        mine += b[k] * a[k];
        k += gridDim.x * blockDim.x;
    }
    partial[lane] = mine;
    __syncthreads();
    int width = blockDim.x / 2;
    while (width > 0) {
        if (lane < width)
            partial[lane] += partial[lane + width];
        __syncthreads();
        width /= 2;
    }
    if (lane == 0)
        atomicAdd(c, partial[0]);
}

// count of positive elements
__global__ void count_positive(const int *v, unsigned int *count, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (v[i] > 0) atomicAdd(count, 1u);
}

int main()
{
    float *a, *b, *r;
    cudaMalloc(&a, N * sizeof(float));
    cudaMalloc(&b, N * sizeof(float));
    cudaMalloc(&r, sizeof(float));
    cudaMemset(r, 0, sizeof(float));
    dot_atomic<<<(N + THREADS - 1) / THREADS, THREADS>>>(a, b, r, N);
    dot_block_tree<<<64, THREADS>>>(a, b, r, N);
    float h;
    cudaMemcpy(&h, r, sizeof(float), cudaMemcpyDeviceToHost);
    printf("%f\n", h);
    return 0;
}

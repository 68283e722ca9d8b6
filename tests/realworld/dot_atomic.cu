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

// classic shared-memory reduction (CUDA by Example) ending in an atomic
__global__ void dot_shared(const float *a, const float *b, float *c, int n)
{
    __shared__ float cache[THREADS];
    int tid = threadIdx.x + blockIdx.x * blockDim.x;
    int cacheIndex = threadIdx.x;
    float temp = 0;
    while (tid < n) {
        temp += a[tid] * b[tid];
        tid += blockDim.x * gridDim.x;
    }
    cache[cacheIndex] = temp;
    __syncthreads();
    int i = blockDim.x / 2;
    while (i != 0) {
        if (cacheIndex < i)
            cache[cacheIndex] += cache[cacheIndex + i];
        __syncthreads();
        i /= 2;
    }
    if (cacheIndex == 0)
        atomicAdd(c, cache[0]);
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
    dot_shared<<<64, THREADS>>>(a, b, r, N);
    float h;
    cudaMemcpy(&h, r, sizeof(float), cudaMemcpyDeviceToHost);
    printf("%f\n", h);
    return 0;
}

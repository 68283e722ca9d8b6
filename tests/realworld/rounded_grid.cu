// Grids written as N / THREADS, as tutorials and older benchmarks write them: exact at the
// program's sizes, while each kernel guards its own range.
#include <cstdio>
#include <cuda_runtime.h>

#define N (1 << 22)
#define THREADS 256
#define W 2048
#define H 1024

__global__ void add(const float *a, const float *b, float *c, int n)
{
    int tid = threadIdx.x + blockIdx.x * blockDim.x;
    if (tid < n)
        c[tid] = a[tid] + b[tid];
}

__global__ void brighten(unsigned char *img, int width, int height, float gain)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) {
        float v = img[y * width + x] * gain;
        img[y * width + x] = v > 255.0f ? 255 : (unsigned char)v;
    }
}

int main()
{
    float *a, *b, *c;
    unsigned char *img;
    cudaMalloc((void **)&a, N * sizeof(float));
    cudaMalloc((void **)&b, N * sizeof(float));
    cudaMalloc((void **)&c, N * sizeof(float));
    cudaMalloc((void **)&img, W * H);
    add<<<N / THREADS, THREADS>>>(a, b, c, N);
    dim3 threads(16, 16);
    dim3 blocks(W / threads.x, H / threads.y);
    brighten<<<blocks, threads>>>(img, W, H, 1.5f);
    cudaDeviceSynchronize();
    printf("done\n");
    return 0;
}

// The CUDA samples' older style: 24-bit multiplies for the indices (__mul24 behind IMUL and IMAD
// macros, __umul24 in grid-stride loops), fast on the first CUDA GPUs and several instructions since.
#include <cstdio>
#include <cuda_runtime.h>

#define IMUL(x, y) __mul24(x, y)
#define IMAD(x, y, z) (__mul24((x), (y)) + (z))

__global__ void addVectorsGPU(const float *a, const float *b, float *sum, int N)
{
    const int i = IMUL(blockIdx.x, blockDim.x) + threadIdx.x;
    if (i < N)
        sum[i] = a[i] + b[i];
}

__global__ void scaleGridStride(float *d_Out, const float *d_In, float scale, int N)
{
    const int tid = __umul24(blockIdx.x, blockDim.x) + threadIdx.x;
    const int threadN = __umul24(blockDim.x, gridDim.x);
    for (int pos = tid; pos < N; pos += threadN)
        d_Out[pos] = scale * d_In[pos];
}

__global__ void imageInvert(unsigned char *d_Dst, const unsigned char *d_Src, int imageW, int imageH)
{
    const int ix = IMAD(blockDim.x, blockIdx.x, threadIdx.x);
    const int iy = IMAD(blockDim.y, blockIdx.y, threadIdx.y);
    if (ix < imageW && iy < imageH)
        d_Dst[IMAD(iy, imageW, ix)] = 255 - d_Src[IMAD(iy, imageW, ix)];
}

__global__ void rowSums(const float *d_In, float *d_Out, int rows, int cols)
{
    const int row = IMUL(blockIdx.x, blockDim.x) + threadIdx.x;
    if (row >= rows)
        return;
    float sum = 0;
    for (int j = 0; j < cols; j++)
        sum += d_In[IMUL(row, cols) + j];
    d_Out[row] = sum;
}

static int divUp(int total, int step) { return (total + step - 1) / step; }

int main()
{
    const int N = 1 << 22, W = 3072, H = 2048, ROWS = 8192, COLS = 1024;
    float *d_a, *d_b, *d_c, *d_rows, *d_sums;
    unsigned char *d_src, *d_dst;
    cudaMalloc((void **)&d_a, N * sizeof(float));
    cudaMalloc((void **)&d_b, N * sizeof(float));
    cudaMalloc((void **)&d_c, N * sizeof(float));
    cudaMalloc((void **)&d_src, W * H);
    cudaMalloc((void **)&d_dst, W * H);
    cudaMalloc((void **)&d_rows, ROWS * COLS * sizeof(float));
    cudaMalloc((void **)&d_sums, ROWS * sizeof(float));

    addVectorsGPU<<<divUp(N, 256), 256>>>(d_a, d_b, d_c, N);
    scaleGridStride<<<128, 256>>>(d_c, d_a, 0.5f, N);
    dim3 threads(32, 8);
    dim3 grid(divUp(W, threads.x), divUp(H, threads.y));
    imageInvert<<<grid, threads>>>(d_dst, d_src, W, H);
    rowSums<<<divUp(ROWS, 128), 128>>>(d_rows, d_sums, ROWS, COLS);
    cudaDeviceSynchronize();
    printf("done\n");
    return 0;
}

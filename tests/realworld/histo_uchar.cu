// Grayscale image histogram, 256 bins, uchar pixels.
#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime.h>

#define NUM_BINS 256
#define WIDTH 7680
#define HEIGHT 4320

#define cudaCheckErrors(msg) \
    do { \
        cudaError_t __err = cudaGetLastError(); \
        if (__err != cudaSuccess) { \
            fprintf(stderr, "Fatal error: %s (%s at %s:%d)\n", msg, cudaGetErrorString(__err), __FILE__, __LINE__); \
            exit(1); \
        } \
    } while (0)

__global__ void histo_kernel(const unsigned char *buffer, long size, unsigned int *histo)
{
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    int stride = blockDim.x * gridDim.x;
    while (i < size) {
        atomicAdd(&(histo[buffer[i]]), 1);
        i += stride;
    }
}

// 2D launch over the image, with 64 coarse bins (value >> 2).
__global__ void histo2d_coarse(const uchar1 *img, int w, int h, int *bins)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {
        unsigned char v = img[y * w + x].x;
        atomicAdd(&bins[v >> 2], 1);
    }
}

int main()
{
    const long SIZE = (long)WIDTH * HEIGHT;
    unsigned char *h_img = (unsigned char *)malloc(SIZE);
    for (long i = 0; i < SIZE; i++) h_img[i] = rand() & 0xff;
    unsigned char *d_img; unsigned int *d_histo;
    cudaMalloc((void **)&d_img, SIZE);
    cudaMalloc((void **)&d_histo, NUM_BINS * sizeof(unsigned int));
    cudaCheckErrors("cudaMalloc");
    cudaMemcpy(d_img, h_img, SIZE, cudaMemcpyHostToDevice);
    cudaMemset(d_histo, 0, NUM_BINS * sizeof(unsigned int));
    int blocks = 2 * 80;
    histo_kernel<<<blocks * 2, 256>>>(d_img, SIZE, d_histo);
    cudaCheckErrors("histo_kernel");
    unsigned int h_histo[NUM_BINS];
    cudaMemcpy(h_histo, d_histo, sizeof(h_histo), cudaMemcpyDeviceToHost);
    printf("bin0 = %u\n", h_histo[0]);
    return 0;
}

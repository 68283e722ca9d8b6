// Grayscale image histogram, 256 bins, uchar pixels.
#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime.h>

#define NUM_BINS 256
#define WIDTH 7680
#define HEIGHT 4320

#define CHECK_LAST(what) \
    do { \
        cudaError_t e_ = cudaGetLastError(); \
        if (e_ != cudaSuccess) { \
            fprintf(stderr, "%s failed: %s (%s line %d)\n", what, cudaGetErrorString(e_), __FILE__, __LINE__); \
            exit(1); \
        } \
    } while (0)

// Every thread strides over the whole image, one global atomic per pixel.
__global__ void gray_histogram(const unsigned char *pixels, long count, unsigned int *bins)
{
    int stride = gridDim.x * blockDim.x;
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    while (p < count) {
        atomicAdd(&bins[pixels[p]], 1);
        p += stride;
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
    unsigned char *d_img; unsigned int *d_bins;
    cudaMalloc((void **)&d_img, SIZE);
    cudaMalloc((void **)&d_bins, NUM_BINS * sizeof(unsigned int));
    CHECK_LAST("cudaMalloc");
    cudaMemcpy(d_img, h_img, SIZE, cudaMemcpyHostToDevice);
    cudaMemset(d_bins, 0, NUM_BINS * sizeof(unsigned int));
    int blocks = 4 * 80;
    gray_histogram<<<blocks, 256>>>(d_img, SIZE, d_bins);
    CHECK_LAST("gray_histogram");
    unsigned int h_bins[NUM_BINS];
    cudaMemcpy(h_bins, d_bins, sizeof(h_bins), cudaMemcpyDeviceToHost);
    printf("bin0 = %u\n", h_bins[0]);
    return 0;
}

/**
 * conv2d.cu: 2D convolution of an NI x NJ image with a fixed 3x3 filter.
 *
 * out[i][j] = sum over the 3x3 neighbourhood of in[i][j], weighted, for the interior points only;
 * the border of the output is left as it was.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <util.h>

#include "conv2d.cuh"

/* The filter's weights, named by compass direction from the centre. */
#define W_NW 0.1
#define W_N (-0.2)
#define W_NE 0.3
#define W_W (-0.4)
#define W_C 0.5
#define W_E (-0.6)
#define W_SW 0.7
#define W_S (-0.8)
#define W_SE 0.9

void conv3x3_host(const DATA_TYPE* in, DATA_TYPE* out)
{
    for (int i = 1; i < NI - 1; ++i) {
        const DATA_TYPE* up = in + (i - 1) * NJ;
        const DATA_TYPE* mid = in + i * NJ;
        const DATA_TYPE* down = in + (i + 1) * NJ;
        for (int j = 1; j < NJ - 1; ++j) {
            DATA_TYPE north = (DATA_TYPE)W_NW * up[j - 1] + (DATA_TYPE)W_N * up[j] + (DATA_TYPE)W_NE * up[j + 1];
            DATA_TYPE centre = (DATA_TYPE)W_W * mid[j - 1] + (DATA_TYPE)W_C * mid[j] + (DATA_TYPE)W_E * mid[j + 1];
            DATA_TYPE south = (DATA_TYPE)W_SW * down[j - 1] + (DATA_TYPE)W_S * down[j] + (DATA_TYPE)W_SE * down[j + 1];
            out[i * NJ + j] = north + centre + south;
        }
    }
}

void fill_input(DATA_TYPE* in)
{
    for (size_t k = 0; k < (size_t)NI * NJ; ++k) {
        in[k] = (DATA_TYPE)rand() / (DATA_TYPE)RAND_MAX;
    }
}

/* Counts the interior points where the two outputs differ by more than the threshold. */
int count_mismatches(const DATA_TYPE* want, const DATA_TYPE* got)
{
    int bad = 0;
    for (int i = 1; i < NI - 1; ++i) {
        for (int j = 1; j < NJ - 1; ++j) {
            if (percent_diff(want[i * NJ + j], got[i * NJ + j]) > PERCENT_DIFF_ERROR_THRESHOLD) {
                ++bad;
            }
        }
    }
    printf("out: interior points beyond %.2f percent of the CPU result: %d\n", PERCENT_DIFF_ERROR_THRESHOLD, bad);
    return bad;
}

__global__ void conv3x3_kernel(DATA_TYPE* A, DATA_TYPE* B)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;

    DATA_TYPE nw, n, ne, w, c, e, sw, s, se;

    nw = W_NW;  n = W_N;  ne = W_NE;
    w = W_W;    c = W_C;  e = W_E;
    sw = W_SW;  s = W_S;  se = W_SE;

    if ((i < NI - 1) && (j < NJ - 1) && (i > 0) && (j > 0)) {
        B[i * NJ + j] = nw * A[(i - 1) * NJ + (j - 1)] + n * A[(i - 1) * NJ + j] + ne * A[(i - 1) * NJ + (j + 1)]
                      + w * A[i * NJ + (j - 1)] + c * A[i * NJ + j] + e * A[i * NJ + (j + 1)]
                      + sw * A[(i + 1) * NJ + (j - 1)] + s * A[(i + 1) * NJ + j] + se * A[(i + 1) * NJ + (j + 1)];
    }
}

void conv3x3_device(const DATA_TYPE* in, DATA_TYPE* out_from_gpu)
{
    const size_t bytes = sizeof(DATA_TYPE) * NI * NJ;
    DATA_TYPE* d_in;
    DATA_TYPE* d_out;

    CUDA_CHECK(cudaMalloc((void**)&d_in, bytes));
    CUDA_CHECK(cudaMalloc((void**)&d_out, bytes));
    CUDA_CHECK(cudaMemcpy(d_in, in, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(d_out, 0, bytes));

    dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
    dim3 grid((size_t)ceil(((float)NJ) / ((float)block.x)), (size_t)ceil(((float)NI) / ((float)block.y)));

    /* The first launch pays for module loading; the second is the one timed. */
    conv3x3_kernel<<<grid, block>>>(d_in, d_out);
    CUDA_CHECK_KERNEL();

    double start = wall_time();
    conv3x3_kernel<<<grid, block>>>(d_in, d_out);
    CUDA_CHECK_KERNEL();
    printf("GPU time: %.6f s\n", wall_time() - start);

    CUDA_CHECK(cudaMemcpy(out_from_gpu, d_out, bytes, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_out));
}

int main(int argc, char* argv[])
{
    const size_t count = (size_t)NI * NJ;
    DATA_TYPE* in = (DATA_TYPE*)malloc(count * sizeof(DATA_TYPE));
    DATA_TYPE* want = (DATA_TYPE*)calloc(count, sizeof(DATA_TYPE));
    DATA_TYPE* got = (DATA_TYPE*)malloc(count * sizeof(DATA_TYPE));
    if (in == NULL || want == NULL || got == NULL) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }

    srand(2024);
    fill_input(in);

    print_device();
    conv3x3_device(in, got);

    double start = wall_time();
    conv3x3_host(in, want);
    printf("CPU time: %.6f s\n", wall_time() - start);

    int bad = count_mismatches(want, got);

    free(in);
    free(want);
    free(got);
    return bad == 0 ? 0 : 1;
}

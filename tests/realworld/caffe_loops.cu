// Kernels in the style of Caffe, Detectron and PyTorch's older CUDA code: every kernel is a
// grid-stride loop spelled through a macro, launched through a block-count helper.
#include <cstdint>
#include <cuda_runtime.h>

#define GRID_LOOP(i, n) \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)

#define GRID_LOOP_AS(index_type, i, n) \
  for (index_type i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)
#define GRID_LOOP_64(i, n) GRID_LOOP_AS(int64_t, i, n)

const int NUM_THREADS_1D = 512;

inline int GET_BLOCKS_1D(const int count) {
  return (count + NUM_THREADS_1D - 1) / NUM_THREADS_1D;
}

template <typename Dtype>
__global__ void LeakyReluKernel(const int n, const Dtype* in, Dtype* out, Dtype slope) {
  GRID_LOOP(i, n) {
    out[i] = in[i] > 0 ? in[i] : slope * in[i];
  }
}

__global__ void channel_affine_kernel(const int count, const float* src, const float* gain,
                                      const float* shift, const int channels, const int spatial,
                                      float* dst) {
  GRID_LOOP(i, count) {
    const int ch = i / spatial % channels;
    dst[i] = src[i] * gain[ch] + shift[ch];
  }
}

__global__ void sigmoid_kernel(const int64_t count, const float* x, float* y) {
  GRID_LOOP_64(i, count) {
    y[i] = 1.0f / (1.0f + expf(-x[i]));
  }
}

__global__ void channel_sum_kernel(const int outer, const int inner, const float* x, float* sums) {
  GRID_LOOP(o, outer) {
    float s = 0;
    for (int k = 0; k < inner; ++k) {
      s += x[o * inner + k];
    }
    sums[o] = s;
  }
}

int main() {
  const int n = 1 << 24, channels = 256, inner = 4096, outer = 8192;
  float *a, *b, *c, *scale, *bias, *sums;
  cudaMalloc(&a, n * sizeof(float));
  cudaMalloc(&b, n * sizeof(float));
  cudaMalloc(&c, (size_t)outer * inner * sizeof(float));
  cudaMalloc(&scale, channels * sizeof(float));
  cudaMalloc(&bias, channels * sizeof(float));
  cudaMalloc(&sums, outer * sizeof(float));
  LeakyReluKernel<float><<<GET_BLOCKS_1D(n), NUM_THREADS_1D>>>(n, a, b, 0.01f);
  channel_affine_kernel<<<GET_BLOCKS_1D(n), NUM_THREADS_1D>>>(n, a, scale, bias, channels, 64, b);
  sigmoid_kernel<<<GET_BLOCKS_1D(n), NUM_THREADS_1D>>>(n, a, b);
  channel_sum_kernel<<<GET_BLOCKS_1D(outer), NUM_THREADS_1D>>>(outer, inner, c, sums);
  cudaDeviceSynchronize();
  return 0;
}

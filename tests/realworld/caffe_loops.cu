// Kernels in the style of Caffe, Detectron and PyTorch's older CUDA code: every kernel is a
// grid-stride loop spelled through a macro, launched through a block-count helper.
#include <cstdint>
#include <cuda_runtime.h>

#define CUDA_KERNEL_LOOP(i, n) \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; \
       i < (n); \
       i += blockDim.x * gridDim.x)

#define CUDA_1D_KERNEL_LOOP_T(i, n, index_t) \
  for (index_t i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)
#define CUDA_1D_KERNEL_LOOP(i, n) CUDA_1D_KERNEL_LOOP_T(i, n, int64_t)

const int CAFFE_CUDA_NUM_THREADS = 512;

inline int CAFFE_GET_BLOCKS(const int N) {
  return (N + CAFFE_CUDA_NUM_THREADS - 1) / CAFFE_CUDA_NUM_THREADS;
}

template <typename Dtype>
__global__ void ReLUForward(const int n, const Dtype* in, Dtype* out, Dtype negative_slope) {
  CUDA_KERNEL_LOOP(index, n) {
    out[index] = in[index] > 0 ? in[index] : in[index] * negative_slope;
  }
}

__global__ void scale_bias_kernel(const int nthreads, const float* bottom, const float* scale,
                                  const float* bias, const int scale_dim, const int inner_dim,
                                  float* top) {
  CUDA_KERNEL_LOOP(index, nthreads) {
    const int scale_index = (index / inner_dim) % scale_dim;
    top[index] = bottom[index] * scale[scale_index] + bias[scale_index];
  }
}

__global__ void sigmoid_kernel(const int64_t count, const float* x, float* y) {
  CUDA_1D_KERNEL_LOOP(i, count) {
    y[i] = 1.0f / (1.0f + expf(-x[i]));
  }
}

__global__ void channel_sum_kernel(const int outer, const int inner, const float* x, float* sums) {
  CUDA_KERNEL_LOOP(o, outer) {
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
  ReLUForward<float><<<CAFFE_GET_BLOCKS(n), CAFFE_CUDA_NUM_THREADS>>>(n, a, b, 0.01f);
  scale_bias_kernel<<<CAFFE_GET_BLOCKS(n), CAFFE_CUDA_NUM_THREADS>>>(n, a, scale, bias, channels, 64, b);
  sigmoid_kernel<<<CAFFE_GET_BLOCKS(n), CAFFE_CUDA_NUM_THREADS>>>(n, a, b);
  channel_sum_kernel<<<CAFFE_GET_BLOCKS(outer), CAFFE_CUDA_NUM_THREADS>>>(outer, inner, c, sums);
  cudaDeviceSynchronize();
  return 0;
}

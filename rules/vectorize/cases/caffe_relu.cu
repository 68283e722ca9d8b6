// Caffe's ReLU: a template whose grid-stride loop is spelled through CUDA_KERNEL_LOOP.
#define CUDA_KERNEL_LOOP(i, n) \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; \
       i < (n); \
       i += blockDim.x * gridDim.x)

template <typename Dtype>
__global__ void ReLUForward(const int n, const Dtype* in, Dtype* out, Dtype negative_slope) {
  CUDA_KERNEL_LOOP(index, n) {
    out[index] = in[index] > 0 ? in[index] : in[index] * negative_slope;
  }
}
template __global__ void ReLUForward<float>(const int, const float*, float*, float);

// A leaky ReLU in the style of Caffe-era layers: a template whose grid-stride loop is spelled
// through a loop macro.
#define GRID_LOOP(i, n) \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; \
       i < (n); \
       i += blockDim.x * gridDim.x)

template <typename Dtype>
__global__ void LeakyReluKernel(const int n, const Dtype* in, Dtype* out, Dtype slope) {
  GRID_LOOP(i, n) {
    out[i] = in[i] > 0 ? in[i] : slope * in[i];
  }
}
template __global__ void LeakyReluKernel<float>(const int, const float*, float*, float);

// A 1D convolution written once for every element type, instantiated for float.
template <typename T>
__global__ void conv1d_t(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, int n, int k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n - k + 1) {
        T acc = 0;
        for (int j = 0; j < k; ++j) {
            acc += x[i + j] * w[j];
        }
        y[i] = acc;
    }
}

template __global__ void conv1d_t<float>(const float*, const float*, float*, int, int);

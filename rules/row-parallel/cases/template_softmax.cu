// A softmax written once for every element type, instantiated for float: row-parallel reads T as
// float and pins the template to it.
template <typename T>
__global__ void softmax_rows(const T* __restrict__ x, T* __restrict__ y, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    T m = x[r * cols];
    for (int c = 1; c < cols; ++c) m = max(m, x[r * cols + c]);
    T sum = 0;
    for (int c = 0; c < cols; ++c) sum += exp(x[r * cols + c] - m);
    for (int c = 0; c < cols; ++c) y[r * cols + c] = exp(x[r * cols + c] - m) / sum;
}

template __global__ void softmax_rows<float>(const float*, float*, int, int);

// The kernel file of a PyTorch C++/CUDA extension, without the torch headers: the binding hands the
// launchers raw pointers and a dtype code. Kernels are templated on scalar_t and picked by a
// dispatch macro that runs a lambda once per type; one kernel takes an elementwise functor, one
// keeps a parameter the binding still passes but the kernel no longer reads.
#include <cuda_runtime.h>
#include <stdint.h>

#define THREADS 256
#define CUDA_KERNEL_LOOP(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)blockDim.x * gridDim.x)

enum class ScalarType { Float, Double };

#define DISPATCH_FLOATING_TYPES(TYPE, NAME, ...)           \
    switch (TYPE) {                                        \
    case ScalarType::Float: {                              \
        using scalar_t = float;                            \
        __VA_ARGS__();                                     \
        break;                                             \
    }                                                      \
    case ScalarType::Double: {                             \
        using scalar_t = double;                           \
        __VA_ARGS__();                                     \
        break;                                             \
    }                                                      \
    }

template <typename T>
struct SoftplusOp {
    __device__ __forceinline__ T operator()(T v) const { return v > T(20) ? v : log1p(exp(v)); }
};

inline int64_t blocks_for(int64_t n) { return (n + THREADS - 1) / THREADS; }

template <typename scalar_t>
__global__ void bias_gelu_forward_kernel(scalar_t* __restrict__ out, const scalar_t* __restrict__ x,
                                         const scalar_t* __restrict__ bias, int64_t rows, int64_t cols) {
    CUDA_KERNEL_LOOP(index, rows * cols) {
        const scalar_t v = x[index] + bias[index % cols];
        out[index] = v * scalar_t(0.5) * (scalar_t(1) + tanh(scalar_t(0.7978845608) * (v + scalar_t(0.044715) * v * v * v)));
    }
}

// `stride` went unused when the layout became contiguous; the binding still passes it
template <typename scalar_t>
__global__ void rms_scale_kernel(scalar_t* __restrict__ y, const scalar_t* __restrict__ x,
                                 const scalar_t* __restrict__ inv_rms, int64_t rows, int64_t cols,
                                 int64_t /*stride*/) {
    const int64_t row = blockIdx.y;
    const int64_t col = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows && col < cols) {
        y[row * cols + col] = x[row * cols + col] * inv_rms[row];
    }
}

template <typename scalar_t, typename func_t>
__global__ void elementwise_kernel(int64_t n, const scalar_t* __restrict__ in, scalar_t* __restrict__ out,
                                   func_t f) {
    CUDA_KERNEL_LOOP(i, n) {
        out[i] = f(in[i]);
    }
}

// a kernel the extension only declares for the linker, defined in a translation unit of its own
template <typename scalar_t, int VEC>
__global__ void copy_vectorized_kernel(scalar_t* __restrict__ dst, const scalar_t* __restrict__ src, int64_t n) {
    const int64_t base = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * VEC;
    #pragma unroll
    for (int v = 0; v < VEC; v++) {
        if (base + v < n) { dst[base + v] = src[base + v]; }
    }
}

void bias_gelu_forward_cuda(void* out, const void* x, const void* bias, int64_t rows, int64_t cols,
                            ScalarType dtype, cudaStream_t stream) {
    const int64_t n = rows * cols;
    DISPATCH_FLOATING_TYPES(dtype, "bias_gelu_forward_cuda", [&] {
        bias_gelu_forward_kernel<scalar_t><<<blocks_for(n), THREADS, 0, stream>>>(
            static_cast<scalar_t*>(out), static_cast<const scalar_t*>(x), static_cast<const scalar_t*>(bias),
            rows, cols);
    });
}

void rms_scale_cuda(void* y, const void* x, const void* inv_rms, int64_t rows, int64_t cols, int64_t stride,
                    ScalarType dtype, cudaStream_t stream) {
    const dim3 grid((unsigned)blocks_for(cols), (unsigned)rows);
    DISPATCH_FLOATING_TYPES(dtype, "rms_scale_cuda", [&] {
        rms_scale_kernel<scalar_t><<<grid, THREADS, 0, stream>>>(
            static_cast<scalar_t*>(y), static_cast<const scalar_t*>(x), static_cast<const scalar_t*>(inv_rms),
            rows, cols, stride);
    });
}

void softplus_cuda(void* out, const void* in, int64_t n, ScalarType dtype, cudaStream_t stream) {
    DISPATCH_FLOATING_TYPES(dtype, "softplus_cuda", [&] {
        elementwise_kernel<<<blocks_for(n), THREADS, 0, stream>>>(n, static_cast<const scalar_t*>(in),
                                                                   static_cast<scalar_t*>(out), SoftplusOp<scalar_t>());
    });
}

// Modern C++ CUDA: sizes as constexpr constants and enumerators in a namespace (no #defines),
// template kernels, __launch_bounds__, launches through qualified names.
#include <cstdint>
#include <cuda_runtime.h>

namespace kernels {
constexpr int kBlock = 256;
constexpr int kTile = 32;
enum { kRows = 8 };

__global__ void __launch_bounds__(kBlock) axpy(float a, const float* __restrict__ x, float* __restrict__ y, int n)
{
    const int i = blockIdx.x * kBlock + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}

// One tile of the transpose per block, kRows rows a step (the CUDA samples' loop, constants for macros).
__global__ void transpose(float* out, const float* in, int width, int height)
{
    const int x = blockIdx.x * kTile + threadIdx.x;
    const int y = blockIdx.y * kTile + threadIdx.y;
    for (int j = 0; j < kTile; j += kRows)
        out[x * height + (y + j)] = in[(y + j) * width + x];
}

template <typename T>
__global__ void row_sum(const T* in, T* out, std::int64_t rows, std::int64_t cols)
{
    const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    T acc = 0;
    for (std::int64_t c = 0; c < cols; ++c) acc += in[r * cols + c];
    out[r] = acc;
}
}  // namespace kernels

int main()
{
    constexpr int n = 1 << 24, w = 4096, h = 4096, rows = 16384, cols = 1024;
    float *x, *y, *t, *s;
    cudaMalloc(&x, sizeof(float) * n);
    cudaMalloc(&y, sizeof(float) * n);
    cudaMalloc(&t, sizeof(float) * w * h);
    cudaMalloc(&s, sizeof(float) * rows);
    kernels::axpy<<<(n + kernels::kBlock - 1) / kernels::kBlock, kernels::kBlock>>>(2.0f, x, y, n);
    dim3 grid(w / kernels::kTile, h / kernels::kTile), block(kernels::kTile, kernels::kRows);
    kernels::transpose<<<grid, block>>>(t, x, w, h);
    kernels::row_sum<float><<<(rows + 127) / 128, 128>>>(x, s, rows, cols);
    cudaDeviceSynchronize();
    return 0;
}

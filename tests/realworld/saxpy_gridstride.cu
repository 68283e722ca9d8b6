#include <cstdio>
#include <cstdint>
#include <vector>
#include <cuda_runtime.h>

#define CHECK_CUDA(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); std::exit(1);} } while (0)

// y = a*x + y over n elements, grid-stride loop with size_t index.
__global__ void saxpy_gs(size_t n, float a, const float *x, float *y)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)blockDim.x * gridDim.x) {
        y[i] = a * x[i] + y[i];
    }
}

// z = x * y elementwise, int stride written as blockDim.x * gridDim.x.
__global__ void vmul(const float *x, const float *y, float *z, int n)
{
    int tid = threadIdx.x + blockIdx.x * blockDim.x;
    int stride = blockDim.x * gridDim.x;
    while (tid < n) {
        z[tid] = x[tid] * y[tid];
        tid += stride;
    }
}

// x = clamp(x) in place, the counter declared before a loop written without an initializer.
__global__ void clamp_bare(float *x, float lo, float hi, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t stride = (size_t)blockDim.x * gridDim.x;
    for (; i < n; i += stride)
        x[i] = fminf(fmaxf(x[i], lo), hi);
}

// ReLU in place, int64 indices.
__global__ void relu_inplace(float *data, int64_t numel)
{
    int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < numel) {
        data[idx] = data[idx] > 0.f ? data[idx] : 0.f;
    }
}

int main()
{
    const size_t N = 1 << 26;
    std::vector<float> hx(N, 1.0f), hy(N, 2.0f);
    float *dx, *dy, *dz;
    CHECK_CUDA(cudaMalloc(&dx, N * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&dy, N * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&dz, N * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(dx, hx.data(), N * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dy, hy.data(), N * sizeof(float), cudaMemcpyHostToDevice));

    int numSMs;
    cudaDeviceGetAttribute(&numSMs, cudaDevAttrMultiProcessorCount, 0);
    saxpy_gs<<<32 * numSMs, 256>>>(N, 2.0f, dx, dy);
    CHECK_CUDA(cudaGetLastError());
    vmul<<<1024, 256>>>(dx, dy, dz, (int)N);
    CHECK_CUDA(cudaGetLastError());
    relu_inplace<<<(N + 255) / 256, 256>>>(dz, (int64_t)N);
    clamp_bare<<<32 * numSMs, 256>>>(dz, -1.0f, 1.0f, N);
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemcpy(hy.data(), dz, N * sizeof(float), cudaMemcpyDeviceToHost));
    std::printf("%f\n", hy[0]);
    return 0;
}

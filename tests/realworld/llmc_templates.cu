// Templated kernels the way a small GPT training code base writes them: block sizes and modes as
// template arguments, fixed by host templates, integral constants, `if constexpr` dispatch and a
// lambda over a tag; a tag parameter with no name, and an unused parameter kept for the caller.
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <type_traits>

#define CEIL_DIV(M, N) (((M) + (N) - 1) / (N))

void cuda_check(cudaError_t status, const char *file, int line) {
    if (status == cudaSuccess) { return; }
    fprintf(stderr, "CUDA failure %s at %s:%d\n", cudaGetErrorString(status), file, line);
    exit(EXIT_FAILURE);
}
#define cudaCheck(call) cuda_check((call), __FILE__, __LINE__)

constexpr int WARP_SIZE = 32;

// ----------------------------------------------------------------------------
// kernels

// the mode comes in as a tag: `std::bool_constant<Atomic>{}` at the call, no name in the kernel
template <bool Atomic>
__global__ void bias_backward_kernel(float* dbias, const float* dout, int BT, int OC, std::bool_constant<Atomic>) {
    int oc = blockIdx.x * blockDim.x + threadIdx.x;
    if (oc >= OC) { return; }
    float sum = 0.0f;
    for (int i = 0; i < BT; i++) {
        sum += dout[i * OC + oc];
    }
    if constexpr (Atomic) {
        atomicAdd(&dbias[oc], sum);
    } else {
        dbias[oc] += sum;
    }
}

// the last parameter is unused since the tanh approximation went in; callers still pass it
__global__ void gelu_fwd_kernel(float* y, const float* x, int N, int /*approximate*/) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float v = x[i];
        float t = tanhf(0.7978845608f * (v + 0.044715f * v * v * v));
        y[i] = 0.5f * v * (1.0f + t);
    }
}

template <typename T, int BLOCK_SIZE>
__global__ void residual_add_kernel(T* y, const T* a, const T* b, int N) {
    int i = blockIdx.x * BLOCK_SIZE + threadIdx.x;
    if (i < N) {
        y[i] = a[i] + b[i];
    }
}

template <int VEC>
__global__ void scale_kernel(float* x, float s, int N) {
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * VEC;
    #pragma unroll
    for (int v = 0; v < VEC; v++) {
        if (base + v < N) { x[base + v] *= s; }
    }
}

template <int UNROLL>
__global__ void sgd_momentum_kernel(float* params, float* m, const float* grads, int num_parameters,
                                    float lr, float beta) {
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * UNROLL;
    for (int u = 0; u < UNROLL; u++, i++) {
        if (i >= num_parameters) { return; }
        float mi = beta * m[i] + grads[i];
        m[i] = mi;
        params[i] -= lr * mi;
    }
}

template <typename T, int BLOCK_SIZE>
__global__ void rmsnorm_forward_kernel(T* out, const T* inp, const T* weight, int N, int C) {
    int row = blockIdx.x;
    if (row >= N) { return; }
    __shared__ float shared[BLOCK_SIZE];
    const T* x = inp + row * C;
    float acc = 0.0f;
    for (int i = threadIdx.x; i < C; i += BLOCK_SIZE) {
        acc += (float)x[i] * (float)x[i];
    }
    shared[threadIdx.x] = acc;
    __syncthreads();
    for (int stride = BLOCK_SIZE / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) { shared[threadIdx.x] += shared[threadIdx.x + stride]; }
        __syncthreads();
    }
    float s = rsqrtf(shared[0] / C + 1e-5f);
    for (int i = threadIdx.x; i < C; i += BLOCK_SIZE) {
        out[row * C + i] = (T)((float)x[i] * s * (float)weight[i]);
    }
}

// attention scores scaled by 1/sqrt(head size): the head size is an int
__global__ void attention_scale_kernel(float* att, const float* preatt, int BNH, int T, int HS) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < BNH * T * T) {
        float scale = 1.0f / sqrtf(HS);
        att[idx] = preatt[idx] * scale;
    }
}

// ----------------------------------------------------------------------------
// kernel launchers

void bias_backward(float* dbias, const float* dout, int B, int T, int OC, bool accumulate_atomically) {
    const int block_size = 128;
    const int grid_size = CEIL_DIV(OC, block_size);
    if (accumulate_atomically) {
        bias_backward_kernel<<<grid_size, block_size>>>(dbias, dout, B * T, OC, std::bool_constant<true>{});
    } else {
        bias_backward_kernel<<<grid_size, block_size>>>(dbias, dout, B * T, OC, std::bool_constant<false>{});
    }
    cudaCheck(cudaGetLastError());
}

void gelu_forward(float* out, const float* inp, int N) {
    const int block_size = 512;
    gelu_fwd_kernel<<<CEIL_DIV(N, block_size), block_size>>>(out, inp, N, 1);
    cudaCheck(cudaGetLastError());
}

template <typename T>
void residual_forward(T* out, const T* inp1, const T* inp2, int N) {
    constexpr int block_size = 256;
    const int grid_size = CEIL_DIV(N, block_size);
    residual_add_kernel<T, block_size><<<grid_size, block_size>>>(out, inp1, inp2, N);
    cudaCheck(cudaGetLastError());
}

void scale_inplace(float* x, float s, int N) {
    auto vec = std::integral_constant<int, 4>{};
    const int block_size = 256;
    scale_kernel<vec.value><<<CEIL_DIV(N, block_size * vec.value), block_size>>>(x, s, N);
    cudaCheck(cudaGetLastError());
}

void sgd_momentum_update(float* params, float* m, const float* grads, int num_parameters, float lr, float beta) {
    const int block_size = 512;
    auto launch = [&](auto unroll) {
        constexpr int U = decltype(unroll)::value;
        const int grid_size = CEIL_DIV(num_parameters, block_size * U);
        sgd_momentum_kernel<decltype(unroll)::value><<<grid_size, block_size>>>(params, m, grads, num_parameters,
                                                                               lr, beta);
    };
    if (num_parameters % 4 == 0) {
        launch(std::integral_constant<int, 4>{});
    } else {
        launch(std::integral_constant<int, 1>{});
    }
    cudaCheck(cudaGetLastError());
}

template <typename T>
void rmsnorm_forward(T* out, const T* inp, const T* weight, int N, int C) {
    if constexpr (std::is_same_v<T, float>) {
        rmsnorm_forward_kernel<T, 256><<<N, 256>>>(out, inp, weight, N, C);
    } else {
        rmsnorm_forward_kernel<T, 128><<<N, 128>>>(out, inp, weight, N, C);
    }
    cudaCheck(cudaGetLastError());
}

void attention_scale(float* att, const float* preatt, int B, int NH, int T, int HS) {
    const int block_size = 256;
    const int total = B * NH * T * T;
    attention_scale_kernel<<<CEIL_DIV(total, block_size), block_size>>>(att, preatt, B * NH, T, HS);
    cudaCheck(cudaGetLastError());
}

// ----------------------------------------------------------------------------

int main() {
    int B = 8, T = 1024, C = 768, OC = 3072, NH = 12;
    int HS = C / NH;
    float *d_a, *d_b, *d_c, *d_m;
    size_t n = (size_t)B * NH * T * T;
    cudaCheck(cudaMalloc(&d_a, n * sizeof(float)));
    cudaCheck(cudaMalloc(&d_b, n * sizeof(float)));
    cudaCheck(cudaMalloc(&d_c, n * sizeof(float)));
    cudaCheck(cudaMalloc(&d_m, n * sizeof(float)));
    cudaCheck(cudaMemset(d_m, 0, n * sizeof(float)));

    bias_backward(d_c, d_a, B, T, OC, true);
    gelu_forward(d_b, d_a, B * T * C);
    residual_forward<float>(d_c, d_a, d_b, B * T * C);
    scale_inplace(d_c, 0.5f, B * T * C);
    sgd_momentum_update(d_a, d_m, d_b, B * T * C, 1e-3f, 0.9f);
    rmsnorm_forward<float>(d_b, d_a, d_c, B * T, C);
    attention_scale(d_c, d_a, B, NH, T, HS);
    cudaCheck(cudaDeviceSynchronize());

    cudaCheck(cudaFree(d_a));
    cudaCheck(cudaFree(d_b));
    cudaCheck(cudaFree(d_c));
    cudaCheck(cudaFree(d_m));
    printf("ok\n");
    return 0;
}

// pairwise.cu: Euclidean distances between two point sets, and the mean distance of each query
// point, as templates over the element type and the block size, run for float and double.
//
//   dist[i][j] = || x[i] - y[j] ||   (pairwise_distance_kernel, one thread per pair)
//   mean[i]    = sum_j dist[i][j] / m (row_mean_kernel, one thread per query point)
#include <cmath>
#include <cstdio>
#include <vector>

#include <util.h>

#include "pairwise.cuh"

template <typename T>
__device__ __forceinline__ T square(T v)
{
    return v * v;
}

template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
pairwise_distance_kernel(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ dist,
                         int n, int m, int d)
{
    const int idx = blockIdx.x * BLOCK + threadIdx.x;
    if (idx >= n * m) {
        return;
    }
    const int row = idx / m;
    const int col = idx % m;

    T acc = T(0);
    for (int k = 0; k < d; ++k) {
        acc += square(x[row * d + k] - y[col * d + k]);
    }
    dist[idx] = sqrt(acc);
}

template <typename T, int BLOCK>
__global__ void row_mean_kernel(const T* __restrict__ dist, T* __restrict__ mean, int n, int m)
{
    const int row = blockIdx.x * BLOCK + threadIdx.x;
    if (row < n) {
        T sum = 0;
        for (int j = 0; j < m; j++) {
            sum += dist[row * m + j];
        }
        mean[row] = sum / static_cast<T>(m);
    }
}

// Double-precision reference on the host.
static void reference(const std::vector<float>& x, const std::vector<float>& y, std::vector<double>& dist,
                      std::vector<double>& mean, int n, int m, int d)
{
    for (int i = 0; i < n; ++i) {
        double sum = 0.0;
        for (int j = 0; j < m; ++j) {
            double acc = 0.0;
            for (int k = 0; k < d; ++k) {
                const double diff = (double)x[(size_t)i * d + k] - (double)y[(size_t)j * d + k];
                acc += diff * diff;
            }
            dist[(size_t)i * m + j] = std::sqrt(acc);
            sum += dist[(size_t)i * m + j];
        }
        mean[i] = sum / m;
    }
}

template <typename T, int BLOCK>
static int run(const std::vector<float>& x_host, const std::vector<float>& y_host,
               const std::vector<double>& dist_ref, const std::vector<double>& mean_ref, int n, int m, int d)
{
    const std::vector<T> x(x_host.begin(), x_host.end());
    const std::vector<T> y(y_host.begin(), y_host.end());
    std::vector<T> dist(static_cast<size_t>(n) * m);
    std::vector<T> mean(n);

    T *x_dev = nullptr, *y_dev = nullptr, *dist_dev = nullptr, *mean_dev = nullptr;
    CUDA_CHECK(cudaMalloc(&x_dev, x.size() * sizeof(T)));
    CUDA_CHECK(cudaMalloc(&y_dev, y.size() * sizeof(T)));
    CUDA_CHECK(cudaMalloc(&dist_dev, dist.size() * sizeof(T)));
    CUDA_CHECK(cudaMalloc(&mean_dev, mean.size() * sizeof(T)));
    CUDA_CHECK(cudaMemcpy(x_dev, x.data(), x.size() * sizeof(T), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(y_dev, y.data(), y.size() * sizeof(T), cudaMemcpyHostToDevice));

    const int pairs = n * m;
    const dim3 threads(BLOCK);
    const dim3 blocks((pairs + BLOCK - 1) / BLOCK);
    const dim3 row_blocks((n + BLOCK - 1) / BLOCK);

    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));

    CUDA_CHECK(cudaEventRecord(start));
    pairwise_distance_kernel<T, BLOCK><<<blocks, threads>>>(x_dev, y_dev, dist_dev, n, m, d);
    CUDA_CHECK(cudaGetLastError());
    row_mean_kernel<T, BLOCK><<<row_blocks, threads>>>(dist_dev, mean_dev, n, m);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));

    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    printf("%s: GPU Runtime: %0.6lfs\n", Tolerance<T>::name, ms / 1000.0);

    CUDA_CHECK(cudaMemcpy(dist.data(), dist_dev, dist.size() * sizeof(T), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(mean.data(), mean_dev, mean.size() * sizeof(T), cudaMemcpyDeviceToHost));

    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    CUDA_CHECK(cudaFree(x_dev));
    CUDA_CHECK(cudaFree(y_dev));
    CUDA_CHECK(cudaFree(dist_dev));
    CUDA_CHECK(cudaFree(mean_dev));

    // The reference is double; compare each output converted to double.
    const std::vector<double> dist_gpu(dist.begin(), dist.end());
    const std::vector<double> mean_gpu(mean.begin(), mean.end());
    int fail = compare_arrays("dist", dist_ref.data(), dist_gpu.data(), dist_gpu.size(), Tolerance<T>::percent);
    fail += compare_arrays("mean", mean_ref.data(), mean_gpu.data(), mean_gpu.size(), Tolerance<T>::percent);
    return fail;
}

int main()
{
    const int n = N_QUERY, m = N_REF, d = DIM;

    std::vector<float> x(static_cast<size_t>(n) * d);
    std::vector<float> y(static_cast<size_t>(m) * d);
    init_random(x.data(), x.size(), 123u, -1.0f, 1.0f);
    init_random(y.data(), y.size(), 456u, -1.0f, 1.0f);

    std::vector<double> dist_ref(static_cast<size_t>(n) * m);
    std::vector<double> mean_ref(n);
    const double t_start = wall_time();
    reference(x, y, dist_ref, mean_ref, n, m, d);
    printf("CPU Runtime: %0.6lfs\n", wall_time() - t_start);

    print_device();
    int fail = run<float, THREADS_PER_BLOCK>(x, y, dist_ref, mean_ref, n, m, d);
    fail += run<double, THREADS_PER_BLOCK>(x, y, dist_ref, mean_ref, n, m, d);
    return fail == 0 ? 0 : 1;
}

// 3D heat equation, explicit Euler, 7-point Laplacian.
// Build: nvcc -O3 heat3d.cu -o heat3d
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                      \
  do {                                                                        \
    cudaError_t err__ = (call);                                               \
    if (err__ != cudaSuccess) {                                               \
      fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(err__),  \
              __FILE__, __LINE__);                                            \
      exit(EXIT_FAILURE);                                                     \
    }                                                                         \
  } while (0)

#ifndef NX
#define NX 256
#endif
#ifndef NY
#define NY 256
#endif
#ifndef NZ
#define NZ 256
#endif

#define IDX3(i, j, k) ((k) * NX * NY + (j) * NX + (i))

__global__ void heat_step(const float *u, float *unew, float alpha)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j = blockIdx.y * blockDim.y + threadIdx.y;
  int k = blockIdx.z * blockDim.z + threadIdx.z;

  if (i > 0 && i < NX - 1 && j > 0 && j < NY - 1 && k > 0 && k < NZ - 1) {
    float c = u[IDX3(i, j, k)];
    float lap = u[IDX3(i - 1, j, k)] + u[IDX3(i + 1, j, k)]
              + u[IDX3(i, j - 1, k)] + u[IDX3(i, j + 1, k)]
              + u[IDX3(i, j, k - 1)] + u[IDX3(i, j, k + 1)] - 6.0f * c;
    unew[IDX3(i, j, k)] = c + alpha * lap;
  }
}

int main(int argc, char **argv)
{
  const size_t n = (size_t)NX * NY * NZ;
  const size_t bytes = n * sizeof(float);
  float *h_u = (float *)malloc(bytes);
  for (size_t i = 0; i < n; ++i) h_u[i] = (float)rand() / RAND_MAX;

  float *d_u, *d_unew;
  CUDA_CHECK(cudaMalloc(&d_u, bytes));
  CUDA_CHECK(cudaMalloc(&d_unew, bytes));
  CUDA_CHECK(cudaMemcpy(d_u, h_u, bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_unew, h_u, bytes, cudaMemcpyHostToDevice));

  dim3 block(8, 8, 8);
  dim3 grid((NX + block.x - 1) / block.x, (NY + block.y - 1) / block.y,
            (NZ + block.z - 1) / block.z);
  const float alpha = 0.1f;
  for (int t = 0; t < 100; ++t) {
    heat_step<<<grid, block>>>(d_u, d_unew, alpha);
    CUDA_CHECK(cudaGetLastError());
    float *tmp = d_u; d_u = d_unew; d_unew = tmp;
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(h_u, d_u, bytes, cudaMemcpyDeviceToHost));
  printf("u[mid] = %f\n", h_u[IDX3(NX / 2, NY / 2, NZ / 2)]);
  cudaFree(d_u); cudaFree(d_unew); free(h_u);
  return 0;
}

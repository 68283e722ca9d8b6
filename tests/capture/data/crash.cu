// Fills a buffer, prints, then aborts before the second launch: a capture keeps the first.
#include <cstdio>
#include <cstdlib>

__global__ void fill(float* out, float value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value + i;
}

int main() {
  const int n = 1000;
  float* out;
  cudaMalloc(&out, n * sizeof(float));
  fill<<<(n + 127) / 128, 128>>>(out, 2.5f, n);
  cudaDeviceSynchronize();
  printf("filled\n");
  fflush(stdout);
  abort();
  fill<<<(n + 127) / 128, 128>>>(out, 0.0f, n);
  return 0;
}

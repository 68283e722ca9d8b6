// One fp32 training step of a small transformer block, in the shape of a hand-written training
// program: the sizes come from a config file read at run time, the device buffers live in structs,
// every kernel is launched through a helper whose hyperparameters are default arguments, and the
// optimizer's bias corrections are computed on the host from the step number.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o trainstep trainstep.cu
//   ./trainstep trainstep.cfg        # prints the sizes, the loss proxy and a checksum per step
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#define cuda_check(call) cuda_check_((call), __FILE__, __LINE__)
static void cuda_check_(cudaError_t err, const char* file, int line) {
  if (err != cudaSuccess) {
    fprintf(stderr, "%s:%d: CUDA call failed: %s\n", file, line, cudaGetErrorString(err));
    exit(EXIT_FAILURE);
  }
}

static int ceil_div(int a, int b) { return (a + b - 1) / b; }

// ---------------------------------------------------------------------------------------------
// kernels

// out[b, t, :] = wte[tokens[b, t], :] + wpe[t, :]
__global__ void encoder_forward_kernel(float* out, const int* tokens, const float* wte, const float* wpe,
                                       int B, int T, int C) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= B * T * C) return;
  int c = idx % C;
  int bt = idx / C;
  int t = bt % T;
  out[idx] = wte[tokens[bt] * C + c] + wpe[t * C + c];
}

// one thread per row of C channels: normalise, then scale and shift; keeps mean and rstd for the
// backward pass
__global__ void layernorm_forward_kernel(float* out, float* mean, float* rstd, const float* inp,
                                         const float* weight, const float* bias, int N, int C, float eps) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= N) return;
  const float* xr = inp + row * C;
  float mu = 0.0f;
  for (int c = 0; c < C; c++) mu += xr[c];
  mu = mu / C;
  float ss = 0.0f;
  for (int c = 0; c < C; c++) {
    float d = xr[c] - mu;
    ss += d * d;
  }
  float rs = 1.0f / sqrtf(ss / C + eps);
  float* yr = out + row * C;
  for (int c = 0; c < C; c++) yr[c] = rs * (xr[c] - mu) * weight[c] + bias[c];
  mean[row] = mu;
  rstd[row] = rs;
}

// out (BT, OC) = inp (BT, C) @ weight (OC, C)^T + bias, in TILE x TILE shared-memory tiles
template <int TILE>
__global__ void matmul_forward_kernel(float* out, const float* inp, const float* weight, const float* bias,
                                      int BT, int C, int OC) {
  __shared__ float a_tile[TILE][TILE];
  __shared__ float w_tile[TILE][TILE];
  int row = blockIdx.y * TILE + threadIdx.y;
  int col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.0f;
  for (int k0 = 0; k0 < C; k0 += TILE) {
    int ka = k0 + threadIdx.x;
    int kw = k0 + threadIdx.y;
    a_tile[threadIdx.y][threadIdx.x] = (row < BT && ka < C) ? inp[row * C + ka] : 0.0f;
    w_tile[threadIdx.y][threadIdx.x] = (col < OC && kw < C) ? weight[col * C + kw] : 0.0f;
    __syncthreads();
    for (int k = 0; k < TILE; k++) acc += a_tile[threadIdx.y][k] * w_tile[k][threadIdx.x];
    __syncthreads();
  }
  if (row < BT && col < OC) out[row * OC + col] = acc + (bias != nullptr ? bias[col] : 0.0f);
}

// preatt[b, h, t, t2] = q[b, t, h, :] . k[b, t2, h, :] * scale, causal; qkv is (B, T, 3C).
// blockIdx.y walks the B * NH (batch, head) pairs.
__global__ void attention_query_key_kernel(float* preatt, const float* qkv, int T, int C, int NH, float scale) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= T * T) return;
  int bh = blockIdx.y;
  int b = bh / NH;
  int h = bh % NH;
  int t = idx / T;
  int t2 = idx % T;
  int hs = C / NH;
  float* out = preatt + (size_t)bh * T * T + idx;
  if (t2 > t) {
    *out = -INFINITY;
    return;
  }
  const float* q = qkv + (b * T + t) * 3 * C + h * hs;
  const float* k = qkv + (b * T + t2) * 3 * C + C + h * hs;
  float dot = 0.0f;
  for (int i = 0; i < hs; i++) dot += q[i] * k[i];
  *out = dot * scale;
}

// row-wise softmax over the last axis of (N, T), one thread per row
__global__ void softmax_forward_kernel(float* att, const float* preatt, int N, int T) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= N) return;
  const float* x = preatt + (size_t)row * T;
  float* y = att + (size_t)row * T;
  float maxval = -INFINITY;
  for (int i = 0; i < T; i++) maxval = fmaxf(maxval, x[i]);
  float sum = 0.0f;
  for (int i = 0; i < T; i++) {
    float e = expf(x[i] - maxval);
    y[i] = e;
    sum += e;
  }
  float norm = 1.0f / sum;
  for (int i = 0; i < T; i++) y[i] *= norm;
}

// GELU, tanh form: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
#define GELU_TANH_K sqrtf(2.0f / M_PI)
__global__ void gelu_forward_kernel(float* out, const float* inp, int N) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) {
    float v = inp[i];
    float inner = v + 0.044715f * v * v * v;
    out[i] = 0.5f * v * (1.0f + tanhf(GELU_TANH_K * inner));
  }
}

// AdamW, one parameter a thread: both moments updated in place, the bias-corrected step plus the
// decoupled weight decay subtracted from the parameter.
__global__ void adamw_kernel(float* params, const float* grads, float* m, float* v, long num_parameters,
                             float learning_rate, float beta1, float beta2, float beta1_correction,
                             float beta2_correction, float eps, float weight_decay) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= num_parameters) return;
  float g = grads[i];
  float first = beta1 * m[i] + (1.0f - beta1) * g;
  float second = beta2 * v[i] + (1.0f - beta2) * g * g;
  m[i] = first;
  v[i] = second;
  float step = (first / beta1_correction) / (sqrtf(second / beta2_correction) + eps);
  params[i] -= learning_rate * (step + weight_decay * params[i]);
}

// ---------------------------------------------------------------------------------------------
// launchers

void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int B, int T, int C,
                     int block_size = 256) {
  int n = B * T * C;
  encoder_forward_kernel<<<ceil_div(n, block_size), block_size>>>(out, tokens, wte, wpe, B, T, C);
  cuda_check(cudaGetLastError());
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int B, int T, int C, int block_size = 128) {
  const int N = B * T;
  const int grid_size = ceil_div(N, block_size);
  layernorm_forward_kernel<<<grid_size, block_size>>>(out, mean, rstd, inp, weight, bias, N, C, 1e-5f);
  cuda_check(cudaGetLastError());
}

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int B, int T, int C,
                    int OC) {
  constexpr int tile = 16;
  dim3 block(tile, tile);
  dim3 grid(ceil_div(OC, tile), ceil_div(B * T, tile));
  matmul_forward_kernel<tile><<<grid, block>>>(out, inp, weight, bias, B * T, C, OC);
  cuda_check(cudaGetLastError());
}

void attention_forward(float* att, float* preatt, const float* qkv, int B, int T, int C, int NH,
                       int block_size = 256) {
  float scale = 1.0f / sqrtf((float)(C / NH));
  int num_blocks = ceil_div(T * T, block_size);
  dim3 grid(num_blocks, B * NH);
  attention_query_key_kernel<<<grid, block_size>>>(preatt, qkv, T, C, NH, scale);
  cuda_check(cudaGetLastError());
  int rows = B * NH * T;
  softmax_forward_kernel<<<ceil_div(rows, block_size), block_size>>>(att, preatt, rows, T);
  cuda_check(cudaGetLastError());
}

void gelu_forward(float* out, const float* inp, int N, int block_size = 512) {
  gelu_forward_kernel<<<ceil_div(N, block_size), block_size>>>(out, inp, N);
  cuda_check(cudaGetLastError());
}

// ---------------------------------------------------------------------------------------------
// model

struct Config {
  int B, T, C, NH, V, steps;
};

struct Params {  // one allocation per tensor
  float* wte;    // (V, C)
  float* wpe;    // (T, C)
  float* ln_w;   // (C)
  float* ln_b;   // (C)
  float* qkv_w;  // (3C, C)
  float* qkv_b;  // (3C)
};

struct Acts {
  int* tokens;    // (B, T)
  float* encoded; // (B, T, C)
  float* ln;      // (B, T, C)
  float* ln_mean; // (B, T)
  float* ln_rstd; // (B, T)
  float* qkv;     // (B, T, 3C)
  float* preatt;  // (B, NH, T, T)
  float* att;     // (B, NH, T, T)
  float* gelu;    // (B, T, 3C)
};

struct Optimizer {
  float* grads;  // gradients of qkv_w
  float* m;
  float* v;
};

static Config read_config(const char* path) {
  FILE* f = fopen(path, "r");
  if (f == nullptr) {
    fprintf(stderr, "cannot open config %s\n", path);
    exit(EXIT_FAILURE);
  }
  Config cfg = {0, 0, 0, 0, 0, 1};
  char key[32];
  int value;
  while (fscanf(f, "%31s %d", key, &value) == 2) {
    if (!strcmp(key, "B")) cfg.B = value;
    else if (!strcmp(key, "T")) cfg.T = value;
    else if (!strcmp(key, "C")) cfg.C = value;
    else if (!strcmp(key, "NH")) cfg.NH = value;
    else if (!strcmp(key, "V")) cfg.V = value;
    else if (!strcmp(key, "steps")) cfg.steps = value;
  }
  fclose(f);
  if (cfg.B <= 0 || cfg.T <= 0 || cfg.C <= 0 || cfg.NH <= 0 || cfg.V <= 0 || cfg.C % cfg.NH != 0) {
    fprintf(stderr, "config %s: B, T, C, NH, V must be positive and NH must divide C\n", path);
    exit(EXIT_FAILURE);
  }
  return cfg;
}

static unsigned long long rng_state = 1337;
static float random_f32() {  // xorshift, uniform in [-1, 1)
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (float)((rng_state * 0x2545F4914F6CDD1Dull) >> 40) / (float)(1ull << 23) - 1.0f;
}

static float* upload_random(size_t n, float scale) {
  std::vector<float> host(n);
  for (size_t i = 0; i < n; i++) host[i] = scale * random_f32();
  float* dev;
  cuda_check(cudaMalloc(&dev, n * sizeof(float)));
  cuda_check(cudaMemcpy(dev, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  return dev;
}

static float* device_zeros(size_t n) {
  float* dev;
  cuda_check(cudaMalloc(&dev, n * sizeof(float)));
  cuda_check(cudaMemset(dev, 0, n * sizeof(float)));
  return dev;
}

static double checksum(const float* dev, size_t n) {
  std::vector<float> host(n);
  cuda_check(cudaMemcpy(host.data(), dev, n * sizeof(float), cudaMemcpyDeviceToHost));
  double sum = 0.0;
  for (size_t i = 0; i < n; i++) sum += host[i] * (double)((i % 7) + 1);
  return sum;
}

void adamw_update(Params& p, Optimizer& opt, const Config& cfg, int t, float learning_rate = 3e-4f,
                  float beta1 = 0.9f, float beta2 = 0.999f, float eps = 1e-8f, float weight_decay = 0.0f) {
  long num_parameters = 3L * cfg.C * cfg.C;
  float beta1_correction = 1.0f - powf(beta1, t);
  float beta2_correction = 1.0f - powf(beta2, t);
  int block_size = 512;
  int num_blocks = ceil_div((int)num_parameters, block_size);
  adamw_kernel<<<num_blocks, block_size>>>(p.qkv_w, opt.grads, opt.m, opt.v, num_parameters, learning_rate,
                                           beta1, beta2, beta1_correction, beta2_correction, eps, weight_decay);
  cuda_check(cudaGetLastError());
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s CONFIG\n", argv[0]);
    return EXIT_FAILURE;
  }
  Config cfg = read_config(argv[1]);
  const int B = cfg.B, T = cfg.T, C = cfg.C, NH = cfg.NH, V = cfg.V;
  printf("trainstep: B=%d T=%d C=%d NH=%d V=%d steps=%d\n", B, T, C, NH, V, cfg.steps);

  Params p;
  p.wte = upload_random((size_t)V * C, 0.1f);
  p.wpe = upload_random((size_t)T * C, 0.01f);
  p.ln_w = upload_random(C, 0.1f);
  p.ln_b = upload_random(C, 0.1f);
  p.qkv_w = upload_random(3 * (size_t)C * C, 0.05f);
  p.qkv_b = upload_random(3 * (size_t)C, 0.01f);

  Acts a;
  std::vector<int> tokens(B * T);
  for (int i = 0; i < B * T; i++) tokens[i] = (int)((i * 2654435761u) % (unsigned)V);
  cuda_check(cudaMalloc(&a.tokens, tokens.size() * sizeof(int)));
  cuda_check(cudaMemcpy(a.tokens, tokens.data(), tokens.size() * sizeof(int), cudaMemcpyHostToDevice));
  a.encoded = device_zeros((size_t)B * T * C);
  a.ln = device_zeros((size_t)B * T * C);
  a.ln_mean = device_zeros((size_t)B * T);
  a.ln_rstd = device_zeros((size_t)B * T);
  a.qkv = device_zeros((size_t)B * T * 3 * C);
  a.preatt = device_zeros((size_t)B * NH * T * T);
  a.att = device_zeros((size_t)B * NH * T * T);
  a.gelu = device_zeros((size_t)B * T * 3 * C);

  Optimizer opt;
  opt.grads = upload_random(3 * (size_t)C * C, 0.01f);
  opt.m = device_zeros(3 * (size_t)C * C);
  opt.v = device_zeros(3 * (size_t)C * C);

  for (int step = 1; step <= cfg.steps; step++) {
    encoder_forward(a.encoded, a.tokens, p.wte, p.wpe, B, T, C);
    layernorm_forward(a.ln, a.ln_mean, a.ln_rstd, a.encoded, p.ln_w, p.ln_b, B, T, C);
    matmul_forward(a.qkv, a.ln, p.qkv_w, p.qkv_b, B, T, C, 3 * C);
    attention_forward(a.att, a.preatt, a.qkv, B, T, C, NH);
    gelu_forward(a.gelu, a.qkv, B * T * 3 * C);
    adamw_update(p, opt, cfg, step);
    cuda_check(cudaDeviceSynchronize());
    printf("step %d: att %.6f gelu %.6f qkv_w %.6f\n", step, checksum(a.att, (size_t)B * NH * T * T),
           checksum(a.gelu, (size_t)B * T * 3 * C), checksum(p.qkv_w, 3 * (size_t)C * C));
  }

  cudaFree(p.wte); cudaFree(p.wpe); cudaFree(p.ln_w); cudaFree(p.ln_b); cudaFree(p.qkv_w); cudaFree(p.qkv_b);
  cudaFree(a.tokens); cudaFree(a.encoded); cudaFree(a.ln); cudaFree(a.ln_mean); cudaFree(a.ln_rstd);
  cudaFree(a.qkv); cudaFree(a.preatt); cudaFree(a.att); cudaFree(a.gelu);
  cudaFree(opt.grads); cudaFree(opt.m); cudaFree(opt.v);
  return 0;
}

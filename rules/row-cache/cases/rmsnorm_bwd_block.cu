// RMS-norm backward with a block per row, as a hand-written training kernel spells it: the block
// reduces the row's dot of the upstream gradient with the scaled input through shared memory,
// then every thread writes the input gradient of its columns and adds its share of the gain's
// gradient with an atomic (all rows add into the same dim elements of dgain).
#define ROW_THREADS 256

__global__ void rmsnorm_bwd_block(float* dx, float* dgain, const float* dy, const float* x,
                                  const float* gain, const float* inv_rms, int n_rows, int dim)
{
    __shared__ float scratch[ROW_THREADS];
    const int row = blockIdx.x;
    const float r = inv_rms[row];
    float dot = 0.0f;
    for (int j = threadIdx.x; j < dim; j += blockDim.x)
        dot += dy[row * dim + j] * gain[j] * x[row * dim + j];
    scratch[threadIdx.x] = dot;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            scratch[threadIdx.x] += scratch[threadIdx.x + half];
        __syncthreads();
    }
    const float mean_dot = scratch[0] / dim;
    for (int j = threadIdx.x; j < dim; j += blockDim.x) {
        const float xn = x[row * dim + j] * r;
        dx[row * dim + j] = r * (dy[row * dim + j] * gain[j] - xn * r * mean_dot);
        atomicAdd(&dgain[j], dy[row * dim + j] * xn);
    }
}

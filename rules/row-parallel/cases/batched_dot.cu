// A batched dot product whose row pointers are element addresses (&u[b * dim]).
__global__ void batched_dot(const float *u, const float *v, float *out, size_t batch, size_t dim)
{
    size_t b = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (b < batch) {
        float acc = 0.f;
        const float *ub = &u[b * dim];
        const float *vb = &v[b * dim];
        for (size_t k = 0; k < dim; ++k) acc += ub[k] * vb[k];
        out[b] = acc;
    }
}

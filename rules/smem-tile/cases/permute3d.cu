// Permute a d0 x d1 x d2 tensor to axes (2, 0, 1): one thread per input element, a 2D block per
// slice of the batch (blockIdx.z), with an early return.
__global__ void permute3d(const float* in, float* out, int d0, int d1, int d2)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z;
    if (x >= d2 || y >= d1) return;
    out[(x * d0 + z) * d1 + y] = in[(z * d1 + y) * d2 + x];
}

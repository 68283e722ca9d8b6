// transposeNaive with its sizes as constants in a namespace, as modern C++ writes them.
namespace kernels {
constexpr int kTile = 32;
enum { kRows = 8 };

__global__ void transpose(float* out, const float* in, int width, int height)
{
    const int x = blockIdx.x * kTile + threadIdx.x;
    const int y = blockIdx.y * kTile + threadIdx.y;
    for (int j = 0; j < kTile; j += kRows)
        out[x * height + (y + j)] = in[(y + j) * width + x];
}
}  // namespace kernels

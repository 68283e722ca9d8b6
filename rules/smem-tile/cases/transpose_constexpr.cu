// A tile-row transpose whose sizes are constants in a namespace, as modern C++ writes them: a
// constexpr tile edge and an enumerator for the rows a block covers at once.
namespace kernels {
constexpr int kTile = 32;
enum { kRows = 8 };

__global__ void transpose(float* out, const float* in, int width, int height)
{
    const int col = threadIdx.x + kTile * blockIdx.x;
    const int row0 = threadIdx.y + kTile * blockIdx.y;
    for (int step = 0; step < kTile; step += kRows) {
        const int row = row0 + step;
        out[col * height + row] = in[row * width + col];
    }
}
}  // namespace kernels

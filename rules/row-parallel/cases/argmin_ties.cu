// The first column of each row's smallest count, written `best_v > v` (many ties: the first wins),
// with the minimum's value stored too.
__global__ void argmin_ties(const int* counts, int* where, int* least, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    int best_v = 2147483647;
    int best_c = -1;
    for (int c = 0; c < cols; c++) {
        if (best_v > counts[r * cols + c]) {
            best_c = c;
            best_v = counts[r * cols + c];
        }
    }
    where[r] = best_c;
    least[r] = best_v;
}

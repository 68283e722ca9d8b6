// Covariance of M columns over N observations, in the style of older GPU benchmark suites: one
// thread per column j1 walks the triangle j2 = j1 .. M-1 serially, accumulating each dot product
// straight into global memory, and mirrors it. A few thousand threads, each with O(M * N) work.
#define DATA_TYPE float

__global__ void covar(int m, int n, DATA_TYPE *symmat, DATA_TYPE *data)
{
    int j1 = blockIdx.x * blockDim.x + threadIdx.x;
    int i, j2;

    if ((j1 < m)) {
        for (j2 = j1; j2 < m; j2++) {
            symmat[j1 * m + j2] = 0.0;
            for (i = 0; i < n; i++) {
                symmat[j1 * m + j2] += data[i * m + j1] * data[i * m + j2];
            }
            symmat[j2 * m + j1] = symmat[j1 * m + j2];
        }
    }
}

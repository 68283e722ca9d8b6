// Column covariance written the way older benchmark ports write it: the element type a macro,
// the loop counters declared up front, every product summed in place in the output. Thread `col`
// owns row `col` of the upper triangle (entries col .. m-1) and copies each finished entry across
// the diagonal, so only m threads run, each with O(m * n) serial work.
#define DATA_TYPE float

__global__ void covar(int m, int n, DATA_TYPE *symmat, DATA_TYPE *data)
{
    int other, obs;
    int col = threadIdx.x + blockDim.x * blockIdx.x;

    if (col >= m)
        return;
    for (other = col; other < m; ++other) {
        symmat[col * m + other] = 0.0f;
        for (obs = 0; obs < n; ++obs)
            symmat[col * m + other] += data[obs * m + other] * data[obs * m + col];
        symmat[other * m + col] = symmat[col * m + other];
    }
}

// PMPP's basic 1D convolution: the taps start at i - r, each read checked against the array's
// ends (ghost cells are zero), the mask in global memory.
__global__ void convolution_1D_basic_kernel(const float *N, const float *M, float *P, int r, int Width)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < Width) {
        float Pvalue = 0;
        int N_start_point = i - r;
        for (int j = 0; j < 2 * r + 1; j++) {
            if (N_start_point + j >= 0 && N_start_point + j < Width) {
                Pvalue += N[N_start_point + j] * M[j];
            }
        }
        P[i] = Pvalue;
    }
}

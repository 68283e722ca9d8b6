// PMPP's 1D convolution as often copied: every thread runs the taps (each read checked against
// the array's ends), only the store is guarded.
__global__ void convolution_1D_store_guard(float *N, float *M, float *P, int Mask_Width, int Width)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float Pvalue = 0;
    int N_start_point = i - (Mask_Width / 2);
    for (int j = 0; j < Mask_Width; j++) {
        if (N_start_point + j >= 0 && N_start_point + j < Width) {
            Pvalue += N[N_start_point + j] * M[j];
        }
    }
    if (i < Width) P[i] = Pvalue;
}

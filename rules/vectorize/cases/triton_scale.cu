// Generated-code style (Triton's CUDA output as people paste it): the block's first index in a local
// of its own, the block size a literal, the guard through a mask.
extern "C" __global__ void triton__0d1d2de(const float *in_ptr0, float *out_ptr0, int xnumel) {
  int xoffset = blockIdx.x * 1024;
  int xindex = xoffset + threadIdx.x;
  bool xmask = xindex < xnumel;
  if (xmask) {
    float tmp0 = in_ptr0[xindex];
    float tmp1 = 2.0f;
    float tmp2 = tmp0 * tmp1;
    out_ptr0[xindex] = tmp2;
  }
}

// A dot product written for one thread (launched <<<1, 1>>>), as quick ports and reference checks do.
__global__ void dot_single(const float* u, const float* v, float* result, int len)
{
    float acc = 0.0f;
    for (int k = 0; k < len; ++k) {
        acc += u[k] * v[k];
    }
    *result = acc;
}

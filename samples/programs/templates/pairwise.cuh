// pairwise.cuh: problem sizes, block size and comparison tolerances of pairwise.cu.
#pragma once

#include <cstdint>

// n query points and m reference points of dimension d.
#ifndef N_QUERY
#define N_QUERY 4096
#endif
#ifndef N_REF
#define N_REF 4096
#endif
#ifndef DIM
#define DIM 64
#endif

#ifndef THREADS_PER_BLOCK
#define THREADS_PER_BLOCK 256
#endif

// Largest accepted difference from the double-precision reference, in percent.
template <typename T>
struct Tolerance;

template <>
struct Tolerance<float> {
    static constexpr double percent = 0.01;
    static constexpr const char* name = "float";
};

template <>
struct Tolerance<double> {
    static constexpr double percent = 1e-6;
    static constexpr const char* name = "double";
};

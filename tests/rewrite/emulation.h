// CUDA blocks on the CPU, for tests: one std::thread per CUDA thread, __syncthreads as a barrier of
// the block, shuffles and votes through a barrier of the warp. Threads that return early leave
// both barriers, as exited threads do on the GPU. Blocks run one after another, so `__shared__`
// (a static local here) is the block's own. Only what rewrites of the test kernels use is here.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

struct dim3 { unsigned x = 1, y = 1, z = 1; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) float2 { float x, y; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(8) int2 { int x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(2) uchar2 { unsigned char x, y; };
struct alignas(4) uchar4 { unsigned char x, y, z, w; };
struct alignas(16) double2 { double x, y; };
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
inline float2 make_float2(float a, float b) { return {a, b}; }
inline int4 make_int4(int a, int b, int c, int d) { return {a, b, c, d}; }
inline double2 make_double2(double a, double b) { return {a, b}; }

// 16-bit floats, as the kernels use them. bfloat16 (cuda_bf16.h): 16 bits, rounded to nearest even from float when stored, read as float;
// arithmetic runs in float (the GPU's operators round each result to bf16, so an expression may
// differ from it in the last bit, the same way in a kernel and its variants).
struct __nv_bfloat16 {
    unsigned short bits;
    __nv_bfloat16() = default;
    template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>> __nv_bfloat16(T v) {
        const float f = float(v);
        unsigned u;
        std::memcpy(&u, &f, sizeof u);
        bits = (u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    }
    operator float() const {
        const unsigned u = unsigned(bits) << 16;
        float f;
        std::memcpy(&f, &u, sizeof f);
        return f;
    }
};
using nv_bfloat16 = __nv_bfloat16;
inline float __bfloat162float(__nv_bfloat16 x) { return x; }
inline __nv_bfloat16 __float2bfloat16(float x) { return x; }
inline __nv_bfloat16 __float2bfloat16_rn(float x) { return x; }
// half (cuda_fp16.h): the compiler's _Float16, likewise stored rounded and read as float
struct __half {
    _Float16 h;
    __half() = default;
    template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>> __half(T v) : h(_Float16(float(v))) {}
    operator float() const { return float(h); }
};
using half = __half;
inline float __half2float(__half x) { return x; }
inline __half __float2half(float x) { return x; }
inline __half __float2half_rn(float x) { return x; }
template <class H> H __hadd(H a, H b) { return float(a) + float(b); }
template <class H> H __hmul(H a, H b) { return float(a) * float(b); }

#define __global__
#define __device__
#define __constant__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
constexpr int warpSize = 32;

thread_local dim3 threadIdx;
dim3 blockIdx, blockDim, gridDim;

struct Warp {
    std::barrier<>* sync;
    unsigned char slot[32][8];
};
std::barrier<>* block_sync;
thread_local Warp* this_warp;
thread_local unsigned lane;

inline void __syncthreads() { block_sync->arrive_and_wait(); }
inline std::atomic<int> block_and{1};
inline int __syncthreads_and(int p) {  // every thread's p, after a barrier of the block
    if (!p) block_and.store(0);
    block_sync->arrive_and_wait();
    const int all = block_and.load();
    block_sync->arrive_and_wait();
    block_and.store(1);  // every thread has read it; the next call starts afresh
    block_sync->arrive_and_wait();
    return all;
}
inline void __syncwarp(unsigned = 0xffffffffu) { this_warp->sync->arrive_and_wait(); }

template <class T> T exchange(T v, unsigned from) {
    static_assert(sizeof(T) <= 8, "shuffles of up to 8 bytes");
    std::memcpy(this_warp->slot[lane], &v, sizeof(T));
    this_warp->sync->arrive_and_wait();
    T out;
    std::memcpy(&out, this_warp->slot[from], sizeof(T));
    this_warp->sync->arrive_and_wait();
    return out;
}
template <class T> T __shfl_sync(unsigned, T v, int src, int width = 32) {
    return exchange(v, lane / width * width + unsigned(src) % width);
}
template <class T> T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
    unsigned from = lane ^ unsigned(mask);
    return exchange(v, from / width == lane / width ? from : lane);
}
template <class T> T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
    return exchange(v, lane % width + delta < unsigned(width) ? lane + delta : lane);
}
template <class T> T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
    return exchange(v, lane % width >= delta ? lane - delta : lane);
}
inline unsigned __ballot_sync(unsigned, int p) {
    unsigned bits = 0;
    for (unsigned l = 0; l < 32; ++l) bits |= unsigned(exchange<int>(p != 0, l) != 0) << l;
    return bits;
}
inline int __any_sync(unsigned m, int p) { return __ballot_sync(m, p) != 0; }
inline int __all_sync(unsigned m, int p) { return __ballot_sync(m, !p) == 0; }

// The launch's buffers, [begin, end): a cache-hinted load (__ldg, ...) reads global memory only; on
// the GPU one of a local or of shared memory faults. The launching code checks the flag after each launch.
std::vector<std::pair<std::uintptr_t, std::uintptr_t>> global_memory;
std::atomic<bool> outside_global{false};
template <class T> std::pair<std::uintptr_t, std::uintptr_t> extent(const std::vector<T>& v) {
    return {std::uintptr_t(v.data()), std::uintptr_t(v.data() + v.size())};
}
template <class T> T global_load(const T* p) {
    const auto a = std::uintptr_t(p);
    if (std::none_of(global_memory.begin(), global_memory.end(),
                     [a](auto r) { return r.first <= a && a + sizeof(T) <= r.second; }))
        outside_global = true;
    return *p;
}
template <class T> T __ldg(const T* p) { return global_load(p); }
template <class T> T __ldca(const T* p) { return global_load(p); }
template <class T> T __ldcg(const T* p) { return global_load(p); }
template <class T> T __ldcs(const T* p) { return global_load(p); }
template <class T> T __ldlu(const T* p) { return global_load(p); }
template <class T> T __ldcv(const T* p) { return global_load(p); }
template <class T> T atomicAdd(T* p, std::type_identity_t<T> v) { return std::atomic_ref<T>(*p).fetch_add(v); }
template <class T> T atomicMax(T* p, std::type_identity_t<T> v) {
    std::atomic_ref<T> a(*p);
    T old = a.load();
    while (old < v && !a.compare_exchange_weak(old, v)) {}
    return old;
}
template <class T> T atomicMin(T* p, std::type_identity_t<T> v) {
    std::atomic_ref<T> a(*p);
    T old = a.load();
    while (v < old && !a.compare_exchange_weak(old, v)) {}
    return old;
}
inline unsigned __umul24(unsigned x, unsigned y) { return (x & 0xffffffu) * (y & 0xffffffu); }
inline int __mul24(int x, int y) {  // the low 24 bits of each, sign-extended; the product's low 32 bits
    const long long a = ((long long)(x & 0xffffff) ^ 0x800000) - 0x800000, b = ((long long)(y & 0xffffff) ^ 0x800000) - 0x800000;
    return (int)(unsigned)(a * b);
}
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __powf(float x, float y) { return std::pow(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
template <class A, class B> auto min(A a, B b) { return a < b ? a : b; }
template <class A, class B> auto max(A a, B b) { return a < b ? b : a; }

// Any pointer type from an untyped buffer, as the launch passes it.
struct Buffer {
    void* p;
    template <class T> operator T*() const { return static_cast<T*>(p); }
};

// The threads that run the launches: made once, as many as the largest block launched so far, and
// kept between launches (with AddressSanitizer a thread's start and end cost more than most test
// kernels do). Thread t runs CUDA thread t of each block of a launch whose blocks have more than t.
class Crew {
public:
    ~Crew() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            closing_ = true;
        }
        posted_.notify_all();
        for (auto& t : threads_) t.join();
    }
    // Starts part(t) on threads 0 .. n-1, making those that do not exist yet.
    void post(unsigned n, const std::function<void(unsigned)>& part) {
        std::lock_guard<std::mutex> lock(mutex_);
        while (threads_.size() < n) threads_.emplace_back([this, t = unsigned(threads_.size())] { serve(t); });
        part_ = &part;
        size_ = running_ = n;
        ++launch_;
        posted_.notify_all();
    }
    // Returns once each thread has returned from the part posted last.
    void wait() {
        std::unique_lock<std::mutex> lock(mutex_);
        finished_.wait(lock, [&] { return running_ == 0; });
    }
private:
    void serve(unsigned t) {
        unsigned long long seen = 0;
        for (;;) {
            const std::function<void(unsigned)>* part;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                posted_.wait(lock, [&] { return closing_ || (launch_ != seen && t < size_); });
                if (closing_) return;
                seen = launch_;
                part = part_;
            }
            (*part)(t);
            std::lock_guard<std::mutex> lock(mutex_);
            if (--running_ == 0) finished_.notify_one();
        }
    }
    std::mutex mutex_;
    std::condition_variable posted_, finished_;
    std::vector<std::thread> threads_;
    const std::function<void(unsigned)>* part_ = nullptr;
    unsigned size_ = 0, running_ = 0;
    unsigned long long launch_ = 0;
    bool closing_ = false;
};
inline Crew crew;

// The launching thread sets each block up (its barriers, blockIdx) between two barriers that all
// the block's threads pass; they run the blocks one after another. Not a template: a program
// launches dozens of kernels, and each instantiation would be compiled again.
inline void launch_any(dim3 grid, dim3 block, const std::function<void()>& kernel) {
    gridDim = grid;
    blockDim = block;
    const unsigned n = block.x * block.y * block.z, warps = (n + 31) / 32;
    const unsigned blocks = grid.x * grid.y * grid.z;
    std::barrier<> start(n + 1), end(n + 1);
    std::vector<Warp> group(warps);
    const std::function<void(unsigned)> part = [&](unsigned t) {
        threadIdx = {t % block.x, t / block.x % block.y, t / (block.x * block.y)};
        lane = t % 32;
        for (unsigned b = 0; b < blocks; ++b) {
            start.arrive_and_wait();
            this_warp = &group[t / 32];
            kernel();
            this_warp->sync->arrive_and_drop();
            block_sync->arrive_and_drop();
            end.arrive_and_wait();
        }
    };
    crew.post(n, part);
    for (unsigned b = 0; b < blocks; ++b) {
        blockIdx = {b % grid.x, b / grid.x % grid.y, b / (grid.x * grid.y)};
        std::barrier<> sync(n);
        block_sync = &sync;
        std::vector<std::unique_ptr<std::barrier<>>> bars;
        for (unsigned w = 0; w < warps; ++w) {
            bars.push_back(std::make_unique<std::barrier<>>(std::min(32u, n - 32 * w)));
            group[w].sync = bars.back().get();
        }
        start.arrive_and_wait();
        end.arrive_and_wait();
    }
    crew.wait();
}
template <class F> void launch(dim3 grid, dim3 block, F kernel) { launch_any(grid, block, kernel); }

// cuopt capture: a CUPTI injection library (loaded by the CUDA driver through
// CUDA_INJECTION64_PATH; the driver calls InitializeInjection at cuInit).
//
// It subscribes to the driver API's kernel launches, which every launch passes through, whether
// the program links the CUDA runtime statically or shared, so each launch is seen once. For the
// chosen kernels' first launches it records, at the launch's API enter: the mangled name, grid,
// block, dynamic shared memory, the parameter layout (cuFuncGetParamInfo) with every parameter's
// bytes, and for the parameters the source declares as pointers the allocation each points into
// (cuPointerGetAttribute) with its contents; at API exit it synchronizes and copies them again.
// The runtime's launch calls are watched too, only to log a launch that never reached the driver.
//
// Configuration (set by `cuopt capture`):
//   CUOPT_CAPTURE_DIR       directory for the records (must exist)
//   CUOPT_CAPTURE_KERNELS   kernels to capture: `name=i,j;name2=;...` (source names; i, j: the
//                           indices of the parameters the source declares as pointers)
//   CUOPT_CAPTURE_LAUNCHES  launches to capture per mangled name (default 1)
//   CUOPT_CAPTURE_MAX_BYTES bytes of buffer snapshots in all (default unlimited)
// Output, written as it goes so that a program that crashes keeps what was captured:
//   launches.jsonl  one line per launch at enter ("phase":"enter") and one at exit ("exit")
//   <seq>.<k>.before.bin / .after.bin   raw contents of launch <seq>'s k-th allocation
//   counts.json     launches seen per mangled name, written when the program exits normally
//   ready           made once the callbacks are subscribed
//   capture.log     errors; nothing is ever printed to the program's stdout or stderr.
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {

struct Driver {
  decltype(&cuCtxSynchronize) ctxSynchronize = nullptr;
  decltype(&cuCtxGetDevice) ctxGetDevice = nullptr;
  decltype(&cuDeviceGetName) deviceGetName = nullptr;
  decltype(&cuFuncGetParamInfo) funcGetParamInfo = nullptr;
  decltype(&cuKernelGetParamInfo) kernelGetParamInfo = nullptr;  // optional
  decltype(&cuFuncGetName) funcGetName = nullptr;
  decltype(&cuPointerGetAttribute) pointerGetAttribute = nullptr;
  decltype(&cuMemcpyDtoH_v2) memcpyDtoH = nullptr;
  decltype(&cuStreamIsCapturing) streamIsCapturing = nullptr;
  decltype(&cuGetErrorString) getErrorString = nullptr;
};

struct Allocation {
  CUdeviceptr base;
  size_t size;
  std::string before, after;  // file names; empty when left out
  bool over_budget = false;
};

struct Pending {  // a launch between its API enter and exit
  long seq = -1;
  std::vector<Allocation> allocations;
};

std::mutex g_lock;
Driver g_drv;
std::string g_dir;
std::map<std::string, std::set<size_t>> g_kernels;  // source name -> pointer parameter indices
long g_launches = 1;
unsigned long long g_max_bytes = ~0ULL;
unsigned long long g_used_bytes = 0;
long g_seq = 0;
std::map<std::string, long> g_seen;  // mangled name -> launches seen
FILE* g_records = nullptr;
thread_local Pending t_pending;
thread_local bool t_inside = false;
thread_local int t_runtime_depth = 0;  // inside a runtime launch call
thread_local bool t_driver_seen = false;  // the driver's launch callback came inside it

void log_error(const char* fmt, ...) {
  std::string path = g_dir + "/capture.log";
  FILE* f = fopen(path.c_str(), "a");
  if (!f) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
  fclose(f);
}

const char* err_name(CUresult r) {
  const char* s = nullptr;
  if (g_drv.getErrorString && g_drv.getErrorString(r, &s) == CUDA_SUCCESS && s) return s;
  return "unknown driver error";
}

template <typename F>
bool load_symbol(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  if (!out) log_error("driver function %s not found", name);
  return out != nullptr;
}

bool load_driver() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) {
    log_error("cannot open libcuda.so.1: %s", dlerror());
    return false;
  }
  bool ok = load_symbol(lib, "cuGetErrorString", g_drv.getErrorString);
  ok &= load_symbol(lib, "cuCtxSynchronize", g_drv.ctxSynchronize);
  ok &= load_symbol(lib, "cuCtxGetDevice", g_drv.ctxGetDevice);
  ok &= load_symbol(lib, "cuDeviceGetName", g_drv.deviceGetName);
  ok &= load_symbol(lib, "cuFuncGetParamInfo", g_drv.funcGetParamInfo);
  ok &= load_symbol(lib, "cuFuncGetName", g_drv.funcGetName);
  g_drv.kernelGetParamInfo = reinterpret_cast<decltype(&cuKernelGetParamInfo)>(dlsym(lib, "cuKernelGetParamInfo"));
  ok &= load_symbol(lib, "cuPointerGetAttribute", g_drv.pointerGetAttribute);
  ok &= load_symbol(lib, "cuMemcpyDtoH_v2", g_drv.memcpyDtoH);
  ok &= load_symbol(lib, "cuStreamIsCapturing", g_drv.streamIsCapturing);
  return ok;
}

// The unqualified function name in an Itanium-mangled symbol: `_ZN2ns5scaleIfLi256EEEvPf` ->
// `scale`; a symbol that is not mangled (extern "C") is its own name.
std::string base_name(const char* sym) {
  if (strncmp(sym, "_Z", 2) != 0) return sym;
  const char* p = sym + 2;
  if (*p == 'N') {
    ++p;
    while (*p == 'r' || *p == 'V' || *p == 'K') ++p;
  }
  std::string last;
  while (*p >= '0' && *p <= '9') {
    char* end = nullptr;
    long n = strtol(p, &end, 10);
    if (n <= 0 || static_cast<long>(strlen(end)) < n) break;
    last.assign(end, static_cast<size_t>(n));
    p = end + n;
  }
  return last;
}

void parse_kernels(const char* spec) {
  std::string s(spec ? spec : "");
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find(';', start);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(start, end - start);
    size_t eq = item.find('=');
    std::string name = item.substr(0, eq);
    std::set<size_t>& ptrs = g_kernels[name];
    if (eq != std::string::npos) {
      std::string list = item.substr(eq + 1);
      size_t p = 0;
      while (p < list.size()) {
        size_t comma = list.find(',', p);
        if (comma == std::string::npos) comma = list.size();
        if (comma > p) ptrs.insert(strtoul(list.substr(p, comma - p).c_str(), nullptr, 10));
        p = comma + 1;
      }
    }
    start = end + 1;
  }
}

void json_string(std::string& out, const char* s) {
  out += '"';
  for (; *s; ++s) {
    unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

void append(std::string& out, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  out += buf;
}

void emit(const std::string& line) {
  if (!g_records) {
    std::string path = g_dir + "/launches.jsonl";
    g_records = fopen(path.c_str(), "a");
    if (!g_records) {
      log_error("cannot open %s", path.c_str());
      return;
    }
  }
  fputs(line.c_str(), g_records);
  fputc('\n', g_records);
  fflush(g_records);
}

// Copy `size` bytes at `base` into the file `name`; false (logged) on failure.
bool snapshot(CUdeviceptr base, size_t size, const std::string& name) {
  std::vector<unsigned char> host(size);
  CUresult r = size ? g_drv.memcpyDtoH(host.data(), base, size) : CUDA_SUCCESS;
  if (r != CUDA_SUCCESS) {
    log_error("copy of %zu bytes at 0x%llx failed: %s", size, static_cast<unsigned long long>(base), err_name(r));
    return false;
  }
  std::string path = g_dir + "/" + name;
  FILE* f = fopen(path.c_str(), "wb");
  if (!f) {
    log_error("cannot write %s", path.c_str());
    return false;
  }
  bool ok = fwrite(host.data(), 1, size, f) == size;
  ok &= fclose(f) == 0;
  if (!ok) log_error("short write to %s", path.c_str());
  return ok;
}

struct LaunchView {
  CUfunction f;
  unsigned grid[3], block[3], shared;
  CUstream stream;
  void** params;
  void** extra;
};

bool view_of(CUpti_CallbackId cbid, const void* fp, LaunchView& v) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      const cuLaunchKernel_params* p = static_cast<const cuLaunchKernel_params*>(fp);
      v = {p->f, {p->gridDimX, p->gridDimY, p->gridDimZ}, {p->blockDimX, p->blockDimY, p->blockDimZ},
           p->sharedMemBytes, p->hStream, p->kernelParams, p->extra};
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      const cuLaunchCooperativeKernel_params* p = static_cast<const cuLaunchCooperativeKernel_params*>(fp);
      v = {p->f, {p->gridDimX, p->gridDimY, p->gridDimZ}, {p->blockDimX, p->blockDimY, p->blockDimZ},
           p->sharedMemBytes, p->hStream, p->kernelParams, nullptr};
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      const cuLaunchKernelEx_params* p = static_cast<const cuLaunchKernelEx_params*>(fp);
      const CUlaunchConfig* c = p->config;
      v = {p->f, {c->gridDimX, c->gridDimY, c->gridDimZ}, {c->blockDimX, c->blockDimY, c->blockDimZ},
           c->sharedMemBytes, c->hStream, p->kernelParams, p->extra};
      return true;
    }
    default:
      return false;
  }
}

// The bytes of parameter `i` (offset and size from the driver), from kernelParams or `extra`'s buffer.
const unsigned char* param_bytes(const LaunchView& v, size_t i, size_t offset) {
  if (v.params) return static_cast<const unsigned char*>(v.params[i]);
  for (void** e = v.extra; e && *e != CU_LAUNCH_PARAM_END; e += 2) {
    if (*e == CU_LAUNCH_PARAM_BUFFER_POINTER) return static_cast<const unsigned char*>(e[1]) + offset;
  }
  return nullptr;
}

// Parameter `i`'s offset and size. The runtime launches through a library kernel (CUkernel) passed
// as the CUfunction, which cuFuncGetParamInfo refuses as an invalid handle; cuKernelGetParamInfo
// reads those.
CUresult param_info(CUfunction f, size_t i, size_t* offset, size_t* size) {
  CUresult r = g_drv.funcGetParamInfo(f, i, offset, size);
  if (r == CUDA_ERROR_INVALID_HANDLE && g_drv.kernelGetParamInfo)
    r = g_drv.kernelGetParamInfo(reinterpret_cast<CUkernel>(f), i, offset, size);
  return r;
}

void on_enter(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  LaunchView v;
  if (!view_of(cbid, cb->functionParams, v)) return;
  const char* mangled = cb->symbolName;
  if ((!mangled || !*mangled) && g_drv.funcGetName(&mangled, v.f) != CUDA_SUCCESS) return;
  std::string name = base_name(mangled);
  auto chosen = g_kernels.find(name);
  if (chosen == g_kernels.end()) return;
  long ordinal = g_seen[mangled]++;
  if (ordinal >= g_launches) return;
  CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
  if (g_drv.streamIsCapturing(v.stream, &capturing) == CUDA_SUCCESS && capturing != CU_STREAM_CAPTURE_STATUS_NONE) {
    log_error("%s: launch %ld is inside a CUDA graph capture; not captured", mangled, ordinal);
    g_seen[mangled] -= 1;  // a later launch outside the graph capture takes its place
    return;
  }
  long seq = g_seq++;
  std::string line = "{\"phase\":\"enter\",\"seq\":";
  append(line, "%ld,\"mangled\":", seq);
  json_string(line, mangled);
  append(line, ",\"ordinal\":%ld,\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"shared\":%u", ordinal, v.grid[0],
         v.grid[1], v.grid[2], v.block[0], v.block[1], v.block[2], v.shared);
  CUdevice dev;
  char devname[256] = "";
  if (g_drv.ctxGetDevice(&dev) == CUDA_SUCCESS) g_drv.deviceGetName(devname, sizeof devname, dev);
  line += ",\"device\":";
  json_string(line, devname);

  CUresult sync = g_drv.ctxSynchronize();
  if (sync != CUDA_SUCCESS) log_error("%s: synchronize before the launch failed: %s", mangled, err_name(sync));
  line += ",\"params\":[";
  Pending pending;
  pending.seq = seq;
  for (size_t i = 0;; ++i) {
    size_t offset = 0, size = 0;
    CUresult r = param_info(v.f, i, &offset, &size);
    if (r != CUDA_SUCCESS) {  // past the last parameter: CUDA_ERROR_INVALID_VALUE
      if (r != CUDA_ERROR_INVALID_VALUE) log_error("%s: the parameter layout (%zu) is not readable: %s", mangled, i, err_name(r));
      break;
    }
    const unsigned char* bytes = param_bytes(v, i, offset);
    append(line, "%s{\"offset\":%zu,\"size\":%zu,\"hex\":\"", i ? "," : "", offset, size);
    for (size_t b = 0; bytes && b < size; ++b) append(line, "%02x", bytes[b]);
    line += "\"";
    if (bytes && size == 8 && chosen->second.count(i)) {
      CUdeviceptr ptr;
      memcpy(&ptr, bytes, 8);
      CUdeviceptr base = 0;
      size_t extent = 0;
      CUresult a = g_drv.pointerGetAttribute(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ptr);
      if (a == CUDA_SUCCESS) a = g_drv.pointerGetAttribute(&extent, CU_POINTER_ATTRIBUTE_RANGE_SIZE, ptr);
      if (a != CUDA_SUCCESS) {
        line += ",\"error\":";
        json_string(line, err_name(a));
      } else {
        size_t k = 0;
        while (k < pending.allocations.size() && pending.allocations[k].base != base) ++k;
        if (k == pending.allocations.size()) {
          Allocation al{base, extent, "", ""};
          al.over_budget = g_used_bytes + 2ULL * extent > g_max_bytes;
          if (!al.over_budget) {
            al.before = std::to_string(seq) + "." + std::to_string(k) + ".before.bin";
            if (snapshot(base, extent, al.before)) {
              g_used_bytes += 2ULL * extent;  // before and after
            } else {
              al.before.clear();
            }
          }
          pending.allocations.push_back(al);
        }
        append(line, ",\"pointer\":%llu,\"base\":%llu,\"extent\":%zu,\"allocation\":%zu",
               static_cast<unsigned long long>(ptr), static_cast<unsigned long long>(base), extent, k);
        if (!pending.allocations[k].before.empty()) {
          line += ",\"before\":";
          json_string(line, pending.allocations[k].before.c_str());
        } else {
          line += pending.allocations[k].over_budget ? ",\"omitted\":\"over --max-bytes\"" : ",\"omitted\":\"copy failed\"";
        }
      }
    }
    line += "}";
  }
  line += "]}";
  emit(line);
  t_pending = pending;
}

void on_exit(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  LaunchView v;
  if (t_pending.seq < 0 || !view_of(cbid, cb->functionParams, v)) return;
  Pending pending = t_pending;
  t_pending = Pending();
  CUresult launched = cb->functionReturnValue ? *static_cast<CUresult*>(cb->functionReturnValue) : CUDA_SUCCESS;
  CUresult sync = g_drv.ctxSynchronize();
  std::string line = "{\"phase\":\"exit\",\"seq\":";
  append(line, "%ld,\"status\":", pending.seq);
  json_string(line, launched != CUDA_SUCCESS ? err_name(launched) : sync != CUDA_SUCCESS ? err_name(sync) : "ok");
  line += ",\"after\":[";
  bool first = true;
  for (size_t k = 0; k < pending.allocations.size(); ++k) {
    Allocation& al = pending.allocations[k];
    if (al.before.empty() || launched != CUDA_SUCCESS || sync != CUDA_SUCCESS) continue;
    std::string name = std::to_string(pending.seq) + "." + std::to_string(k) + ".after.bin";
    if (!snapshot(al.base, al.size, name)) continue;
    append(line, "%s{\"allocation\":%zu,\"file\":", first ? "" : ",", k);
    json_string(line, name.c_str());
    line += "}";
    first = false;
  }
  line += "]}";
  emit(line);
}

// A runtime launch whose driver launch did not reach the driver callbacks is logged, so that a
// capture that saw nothing says why.
void on_runtime(const CUpti_CallbackData* cb) {
  if (cb->callbackSite == CUPTI_API_ENTER) {
    if (t_runtime_depth++ == 0) t_driver_seen = false;
    return;
  }
  if (--t_runtime_depth != 0 || t_driver_seen || !cb->symbolName) return;
  std::lock_guard<std::mutex> guard(g_lock);
  if (g_kernels.count(base_name(cb->symbolName)))
    log_error("%s: runtime launch (%s) not seen by the driver callbacks; not captured", cb->symbolName,
              cb->functionName);
}

void CUPTIAPI callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  const CUpti_CallbackData* cb = static_cast<const CUpti_CallbackData*>(data);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    on_runtime(cb);
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || t_inside) return;
  t_driver_seen = true;
  t_inside = true;  // the driver calls made here are not launches, but never re-enter
  {
    std::lock_guard<std::mutex> guard(g_lock);
    if (cb->callbackSite == CUPTI_API_ENTER) {
      on_enter(cbid, cb);
    } else {
      on_exit(cbid, cb);
    }
  }
  t_inside = false;
}

void write_counts() {
  std::lock_guard<std::mutex> guard(g_lock);
  if (g_records) fflush(g_records);
  std::string text = "{";
  bool first = true;
  for (const auto& kv : g_seen) {
    if (!first) text += ",";
    json_string(text, kv.first.c_str());
    append(text, ":%ld", kv.second);
    first = false;
  }
  text += "}\n";
  std::string path = g_dir + "/counts.json";
  FILE* f = fopen(path.c_str(), "w");
  if (!f) return;
  fputs(text.c_str(), f);
  fclose(f);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static bool done = false;
  if (done) return 1;
  done = true;
  const char* dir = getenv("CUOPT_CAPTURE_DIR");
  if (!dir || !*dir) return 1;
  g_dir = dir;
  parse_kernels(getenv("CUOPT_CAPTURE_KERNELS"));
  if (const char* n = getenv("CUOPT_CAPTURE_LAUNCHES")) g_launches = strtol(n, nullptr, 10);
  if (const char* b = getenv("CUOPT_CAPTURE_MAX_BYTES")) g_max_bytes = strtoull(b, nullptr, 10);
  if (!load_driver()) return 1;
  CUpti_SubscriberHandle subscriber;
  CUptiResult r = cuptiSubscribe(&subscriber, callback, nullptr);
  if (r != CUPTI_SUCCESS) {
    const char* s = "";
    cuptiGetResultString(r, &s);
    log_error("cuptiSubscribe failed: %s", s);
    return 1;
  }
  const CUpti_CallbackId launches[] = {
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
  };
  const CUpti_CallbackId runtime_launches[] = {
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,       CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,   CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
      CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
  };
  auto enable = [&](CUpti_CallbackDomain domain, CUpti_CallbackId id) {
    CUptiResult e = cuptiEnableCallback(1, subscriber, domain, id);
    if (e != CUPTI_SUCCESS) {
      const char* s = "";
      cuptiGetResultString(e, &s);
      log_error("cuptiEnableCallback(%u) failed: %s", static_cast<unsigned>(id), s);
    }
  };
  for (CUpti_CallbackId id : launches) enable(CUPTI_CB_DOMAIN_DRIVER_API, id);
  for (CUpti_CallbackId id : runtime_launches) enable(CUPTI_CB_DOMAIN_RUNTIME_API, id);
  std::string ready = g_dir + "/ready";
  if (FILE* f = fopen(ready.c_str(), "w")) fclose(f);
  atexit(write_counts);
  return 1;
}

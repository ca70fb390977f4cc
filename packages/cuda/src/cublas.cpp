// Note [cuBLAS loading]
// =====================
// cuBLAS is not linked: its runtime comes from PyPI's CUDA 13 wheel
// nvidia-cublas (several hundred MB, installed by `pip install
// "flambeau[cuda]"`), so flambeau-cuda builds and imports without it (CI never
// downloads it) and opens it with dlopen at the first GEMM. It looks in
// <site-packages>/nvidia/cu13/lib and <site-packages>/nvidia/cublas/lib (the
// wheel's layouts) for libcublas.so.13, then asks the system loader. The few
// entry points used are declared here from cuBLAS's documented C ABI
// (cublas_api.h, _v2 names): handles are opaque pointers, enums are ints.
// One handle per (thread, device), bound to the stream of each call.
#include "cublas.h"

#include <dlfcn.h>

#include <filesystem>
#include <mutex>
#include <unordered_map>

#include "backend.h"

namespace flambeau::cuda {
namespace {

using cublasHandle_t = void*;
using cublasStatus_t = int;
constexpr int CUBLAS_OP_N = 0;
constexpr int CUBLAS_OP_T = 1;

using CreateFn = cublasStatus_t (*)(cublasHandle_t*);
using DestroyFn = cublasStatus_t (*)(cublasHandle_t);
using SetStreamFn = cublasStatus_t (*)(cublasHandle_t, cudaStream_t);
using SgemmFn = cublasStatus_t (*)(cublasHandle_t, int, int, int, int, int, const float*, const float*, int,
                                   const float*, int, const float*, float*, int);
using DgemmFn = cublasStatus_t (*)(cublasHandle_t, int, int, int, int, int, const double*, const double*, int,
                                   const double*, int, const double*, double*, int);
using SgemmBatchedFn = cublasStatus_t (*)(cublasHandle_t, int, int, int, int, int, const float*, const float*,
                                          int, long long, const float*, int, long long, const float*, float*,
                                          int, long long, int);
using DgemmBatchedFn = cublasStatus_t (*)(cublasHandle_t, int, int, int, int, int, const double*,
                                          const double*, int, long long, const double*, int, long long,
                                          const double*, double*, int, long long, int);

struct Cublas {
  void* lib = nullptr;
  std::string path;
  CreateFn create = nullptr;
  DestroyFn destroy = nullptr;
  SetStreamFn set_stream = nullptr;
  SgemmFn sgemm = nullptr;
  DgemmFn dgemm = nullptr;
  SgemmBatchedFn sgemm_batched = nullptr;
  DgemmBatchedFn dgemm_batched = nullptr;
};

std::mutex g_mutex;
Cublas g_cublas;
std::vector<std::string> g_search_dirs;

template <class F>
F symbol(void* lib, const char* name, const std::string& path) {
  void* p = dlsym(lib, name);
  FB_CHECK(p, "[cuda] ", path, " has no symbol ", name,
           "; flambeau-cuda needs the CUDA 13 cuBLAS (pip install nvidia-cublas)");
  return reinterpret_cast<F>(p);
}

const Cublas& loaded() {
  {
    std::lock_guard lock(g_mutex);
    if (g_cublas.lib) return g_cublas;
  }
  std::vector<std::string> dirs;
  {
    std::lock_guard lock(g_mutex);
    dirs = g_search_dirs;
  }
  load_cublas(dirs);
  return g_cublas;
}

void check_status(const char* call, cublasStatus_t st) {
  if (st != 0) FB_CHECK(false, "[cuda] ", call, " failed with cuBLAS status ", st);
}

cublasHandle_t handle_for(int device) {
  thread_local std::unordered_map<int, cublasHandle_t> handles;  // kept for the thread's life
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  const Cublas& c = loaded();
  cublasHandle_t h = nullptr;
  check_status("cublasCreate_v2", c.create(&h));
  handles[device] = h;
  return h;
}

int as_int(int64_t v, const char* what) {
  FB_CHECK_VALUE(v >= 0 && v <= INT32_MAX, "[matmul] ", what, " = ", v, " exceeds cuBLAS's 32-bit sizes");
  return static_cast<int>(v);
}

}  // namespace

void set_cublas_search_dirs(std::vector<std::string> dirs) {
  std::lock_guard lock(g_mutex);
  g_search_dirs = std::move(dirs);
}

std::string cublas_path() {
  std::lock_guard lock(g_mutex);
  return g_cublas.path;
}

std::string load_cublas(const std::vector<std::string>& search_dirs) {
  std::lock_guard lock(g_mutex);
  if (g_cublas.lib) return g_cublas.path;
  std::vector<std::string> candidates;
  for (const std::string& d : search_dirs)
    for (const char* sub : {"nvidia/cu13/lib/libcublas.so.13", "nvidia/cublas/lib/libcublas.so.13"})
      candidates.push_back((std::filesystem::path(d) / sub).string());
  candidates.push_back("libcublas.so.13");  // the system loader's path
  std::string tried;
  for (const std::string& path : candidates) {
    if (path.find('/') != std::string::npos && !std::filesystem::exists(path)) {
      tried += "\n  " + path + " (not found)";
      continue;
    }
    // RTLD_GLOBAL: libcublas loads libcublasLt next to it.
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
      const char* err = dlerror();
      tried += "\n  " + path + " (" + (err ? err : "dlopen failed") + ")";
      continue;
    }
    Cublas c;
    c.lib = lib;
    c.path = path;
    c.create = symbol<CreateFn>(lib, "cublasCreate_v2", path);
    c.destroy = symbol<DestroyFn>(lib, "cublasDestroy_v2", path);
    c.set_stream = symbol<SetStreamFn>(lib, "cublasSetStream_v2", path);
    c.sgemm = symbol<SgemmFn>(lib, "cublasSgemm_v2", path);
    c.dgemm = symbol<DgemmFn>(lib, "cublasDgemm_v2", path);
    c.sgemm_batched = symbol<SgemmBatchedFn>(lib, "cublasSgemmStridedBatched", path);
    c.dgemm_batched = symbol<DgemmBatchedFn>(lib, "cublasDgemmStridedBatched", path);
    g_cublas = c;
    return path;
  }
  throw RuntimeError(
      "[cuda] cuBLAS (libcublas.so.13) was not found; matrix products on CUDA need it: pip install "
      "nvidia-cublas "
      "(or pip install \"flambeau[cuda]\"). Tried:" +
      tried);
}

void gemm_strided_batched(bool is_double, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                          double alpha, const void* a, int64_t lda, int64_t stride_a, const void* b,
                          int64_t ldb, int64_t stride_b, double beta, void* c, int64_t ldc, int64_t stride_c,
                          int64_t batch, cudaStream_t stream) {
  const Cublas& lib = loaded();
  int device = 0;
  FBC_CHECK("cudaGetDevice", cudaGetDevice(&device));
  cublasHandle_t h = handle_for(device);
  check_status("cublasSetStream_v2", lib.set_stream(h, stream));
  const int ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int M = as_int(m, "m"), N = as_int(n, "n"), K = as_int(k, "k");
  const int LDA = as_int(lda, "lda"), LDB = as_int(ldb, "ldb"), LDC = as_int(ldc, "ldc");
  const int B = as_int(batch, "batch");
  if (is_double) {
    const double al = alpha, be = beta;
    if (B == 1)
      check_status("cublasDgemm_v2",
                   lib.dgemm(h, ta, tb, M, N, K, &al, static_cast<const double*>(a), LDA,
                             static_cast<const double*>(b), LDB, &be, static_cast<double*>(c), LDC));
    else
      check_status("cublasDgemmStridedBatched",
                   lib.dgemm_batched(h, ta, tb, M, N, K, &al, static_cast<const double*>(a), LDA, stride_a,
                                     static_cast<const double*>(b), LDB, stride_b, &be,
                                     static_cast<double*>(c), LDC, stride_c, B));
  } else {
    const float al = static_cast<float>(alpha), be = static_cast<float>(beta);
    if (B == 1)
      check_status("cublasSgemm_v2",
                   lib.sgemm(h, ta, tb, M, N, K, &al, static_cast<const float*>(a), LDA,
                             static_cast<const float*>(b), LDB, &be, static_cast<float*>(c), LDC));
    else
      check_status("cublasSgemmStridedBatched",
                   lib.sgemm_batched(h, ta, tb, M, N, K, &al, static_cast<const float*>(a), LDA, stride_a,
                                     static_cast<const float*>(b), LDB, stride_b, &be, static_cast<float*>(c),
                                     LDC, stride_c, B));
  }
}

}  // namespace flambeau::cuda

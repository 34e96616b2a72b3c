#include "engine/gemm.h"

#include "engine/packed_linear.h"
#include "engine/thread_team.h"

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#ifdef ATTNSCOPE_HAVE_OPENBLAS
#include <cblas.h>
#include <omp.h>
#endif

namespace attnscope {

namespace {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Stride = Eigen::OuterStride<>;
using ConstMap = Eigen::Map<const RowMajor, Eigen::Unaligned, Stride>;
using Map = Eigen::Map<RowMajor, Eigen::Unaligned, Stride>;

GemmBackend initialBackend() {
  if (const char* env = std::getenv("ATTNSCOPE_GEMM"))
    for (const GemmBackendName& n : gemmBackendNames())
      if (std::strcmp(env, n.id) == 0 && gemmBackendAvailable(n.value)) return n.value;
  return gemmDefaultBackend();
}

GemmBackend& current();

#ifdef ATTNSCOPE_HAVE_OPENBLAS
// Below this many multiply-adds a product runs on Eigen whatever the backend: OpenBLAS's per-call
// overhead (its buffers are taken behind a lock) outweighs a small product, as the fused kernel's
// tiles showed when they were GEMMs (docs/engine-measurements.md).
constexpr double kBlasMinWork = 1 << 22;

bool useBlas(int m, int n, int k) {
  if (current() != GemmBackend::OpenBlas || static_cast<double>(m) * n * k < kBlasMinWork) return false;
  // One thread per call, always: the parallelism is ours. OpenBLAS's OpenMP build starts a team
  // of omp_get_max_threads() (one per core unless this thread said otherwise) for every call from
  // outside an OpenMP region, which every call from our threads is (engine/thread_team.h). On a
  // busy machine such a team spins far longer than the product takes (docs/engine-measurements.md).
  // This thread's ICV is ours to set: nothing of ours uses OpenMP.
  if (omp_get_max_threads() != 1) omp_set_num_threads(1);
  return true;
}
#endif

GemmBackend& current() {
  static GemmBackend backend = initialBackend();
  return backend;
}

}  // namespace

const std::array<GemmBackendName, 3>& gemmBackendNames() {
  static const std::array<GemmBackendName, 3> names{
      {{GemmBackend::Packed, "packed"}, {GemmBackend::Eigen, "eigen"}, {GemmBackend::OpenBlas, "openblas"}}};
  return names;
}

const char* gemmBackendId(GemmBackend backend) {
  for (const GemmBackendName& n : gemmBackendNames())
    if (n.value == backend) return n.id;
  return "?";
}

bool gemmBackendAvailable(GemmBackend backend) {
  switch (backend) {
    case GemmBackend::Packed: return isaSupported(Isa::Avx2);
    case GemmBackend::Eigen: return true;
    case GemmBackend::OpenBlas:
#ifdef ATTNSCOPE_HAVE_OPENBLAS
      return true;
#else
      return false;
#endif
  }
  return false;
}

GemmBackend gemmDefaultBackend() {
  // The fastest in `make bench`'s gemm section on one thread, on the projections' and out_proj's
  // shapes (docs/engine-measurements.md): the packed product wherever the CPU has AVX2 (it also
  // adds the bias and checks finiteness as it stores; Debian's OpenBLAS 0.3.21 kernels stop at
  // AVX2 on AMD CPUs). Without AVX2, Eigen where it is built with AVX-512; with neither, OpenBLAS.
  if (gemmBackendAvailable(GemmBackend::Packed)) return GemmBackend::Packed;
#if defined(__AVX512F__) || !defined(ATTNSCOPE_HAVE_OPENBLAS)
  return GemmBackend::Eigen;
#else
  return GemmBackend::OpenBlas;
#endif
}

GemmBackend gemmBackend() { return current(); }

void setGemmBackend(GemmBackend backend) {
  if (gemmBackendAvailable(backend)) current() = backend;
}

namespace {

// C = A·op(B) + beta·C, op(B) = Bᵀ (B: n × k) or B (B: k × n): the one body of both products.
void gemm(bool transpose_b, int m, int n, int k, const float* A, int lda, const float* B, int ldb, float beta, float* C,
          int ldc) {
  if (m <= 0 || n <= 0) return;
#ifdef ATTNSCOPE_HAVE_OPENBLAS
  if (useBlas(m, n, k)) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, A, lda, B, ldb,
                beta, C, ldc);
    return;
  }
#endif
  const ConstMap a(A, m, k, Stride(lda));
  const ConstMap b(B, transpose_b ? n : k, transpose_b ? k : n, Stride(ldb));
  Map c(C, m, n, Stride(ldc));
  if (beta == 0.0f) {
    if (transpose_b)
      c.noalias() = a * b.transpose();
    else
      c.noalias() = a * b;
    return;
  }
  if (beta != 1.0f) c *= beta;
  if (transpose_b)
    c.noalias() += a * b.transpose();
  else
    c.noalias() += a * b;
}

}  // namespace

void gemmABt(int m, int n, int k, const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  gemm(true, m, n, k, A, lda, B, ldb, beta, C, ldc);
}

void gemmAB(int m, int n, int k, const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  gemm(false, m, n, k, A, lda, B, ldb, beta, C, ldc);
}

// The operands of one measured product C = A·Bᵀ (m × n × k), filled with small exact values; on
// the packed backend B is packed here, once, as a linear layer's weights are.
struct GemmOperands {
  int m, n, k;
  std::vector<float> a, b, c;
  PackedLinear packed;
  bool use_packed;
  GemmOperands(int m_, int n_, int k_, GemmBackend backend)
      : m(m_),
        n(n_),
        k(k_),
        a(static_cast<std::size_t>(m_) * k_),
        b(static_cast<std::size_t>(n_) * k_),
        c(static_cast<std::size_t>(m_) * n_),
        use_packed(backend == GemmBackend::Packed) {
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 17) * 0.01f;
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 13) * 0.01f;
    if (use_packed) packed = PackedLinear(b.data(), n, k, k, nullptr);
  }
  void run() {
    if (use_packed)
      packed.apply(m, a.data(), k, c.data(), n);
    else
      gemmABt(m, n, k, a.data(), k, b.data(), k, 0.0f, c.data(), n);
  }
  double gflop() const { return 2.0 * m * n * k / 1e9; }
};

namespace {

double secondsOf(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

double measureGemmGflops(GemmBackend backend, int m, int n, int k, int repeat) {
  const GemmBackend saved = current();
  setGemmBackend(backend);
  GemmOperands g(m, n, k, backend);
  double best = 1e30;
  for (int r = 0; r < std::max(repeat, 1) + 1; ++r) {  // the first run warms up
    const double s = secondsOf([&] { g.run(); });
    if (r > 0) best = std::min(best, s);
  }
  current() = saved;
  return g.gflop() / best;
}

ConcurrentGemm::ConcurrentGemm(int m, int n, int k, int threads) : threads_(std::max(threads, 1)) {
  for (int t = 0; t < threads_; ++t) operands_.push_back(std::make_shared<GemmOperands>(m, n, k, current()));
}

ConcurrentGemm::~ConcurrentGemm() = default;

double ConcurrentGemm::measureGflops() {
  // Each thread runs its own product; the slowest one sets the time. Both cores busy at once is
  // what the forward pass asks of the machine (shared L3 and memory, the all-core clock).
  // On the engine's team, the threads the forward pass runs on.
  const auto run_all = [this] {
    parallelFor(
        threads_, threads_, [this](int t) { operands_[static_cast<std::size_t>(t)]->run(); }, Schedule::Static);
  };
  return threads_ * operands_.front()->gflop() / secondsOf(run_all);
}

}  // namespace attnscope

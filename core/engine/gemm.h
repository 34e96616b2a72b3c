// Matrix products of the fast path, on row-major floats, single-threaded in the calling thread:
// our own thread team splits the work, so a BLAS never starts threads of its own inside it.
// Backends: our packed linear product (packed_linear.h: the projections' weights packed once,
// where the CPU has AVX2 or AVX-512), Eigen (always built) and OpenBLAS through cblas (its OpenMP
// build, which runs single-threaded inside our parallel regions). Which one runs is measured by
// `make bench` (docs/DESIGN.md §4 "Benchmarks"); the default is the one that won there.
#pragma once
#include <array>
#include <memory>
#include <vector>

namespace attnscope {

// Packed: the linear layers (projections, out_proj) run on PackedLinear; every other product, which
// has no weights to pack once (a traced head's Q·Kᵀ and P·V), on Eigen.
enum class GemmBackend { Packed, Eigen, OpenBlas };

struct GemmBackendName {
  GemmBackend value;
  const char* id;  // "packed", "eigen", "openblas": ATTNSCOPE_GEMM and the benchmark's keys
};
const std::array<GemmBackendName, 3>& gemmBackendNames();
const char* gemmBackendId(GemmBackend backend);

// Whether this build and CPU have the backend (OpenBLAS is optional at build time; the packed
// product needs AVX2 or AVX-512).
bool gemmBackendAvailable(GemmBackend backend);
// The backend products use: ATTNSCOPE_GEMM=eigen|openblas when set and available, otherwise the
// default for this build and CPU (gemmDefaultBackend). Fixed for the life of the process unless
// setGemmBackend changes it (benchmarks and tests).
GemmBackend gemmBackend();
GemmBackend gemmDefaultBackend();
void setGemmBackend(GemmBackend backend);

// Products below 2²² multiply-adds (a traced row block's Q·Kᵀ and P·V) always run on Eigen. The
// fused kernel's tiles do not come here: their inner dimension is a head's width, too short for a
// GEMM's packing to pay, and they run on the micro-kernels of tile_kernels.h.
// C = A·Bᵀ + beta·C. A: m × k (row stride lda), B: n × k (ldb), C: m × n (ldc).
void gemmABt(int m, int n, int k, const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc);
// C = A·B + beta·C. A: m × k (lda), B: k × n (ldb), C: m × n (ldc).
void gemmAB(int m, int n, int k, const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc);

// One-thread sgemm speed of `backend` on C = A·Bᵀ of m × n × k (best of `repeat` runs), GFLOP/s.
// For Packed, B is packed before the timed runs, as a layer's weights are.
double measureGemmGflops(GemmBackend backend, int m, int n, int k, int repeat);

struct GemmOperands;
// The same product on `threads` threads at once, each on its own operands (allocated here, once):
// the GEMM speed of the whole machine at this moment, to pair with a timed forward pass so that
// both see the same load (make bench, DESIGN §2.3). Uses the current backend.
class ConcurrentGemm {
 public:
  ConcurrentGemm(int m, int n, int k, int threads);
  ~ConcurrentGemm();
  double measureGflops();  // one run of every thread's product: total GFLOP ÷ the slowest's time

 private:
  int threads_;
  std::vector<std::shared_ptr<GemmOperands>> operands_;
};

}  // namespace attnscope

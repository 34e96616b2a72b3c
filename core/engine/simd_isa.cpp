#include "engine/simd_isa.h"

#include <stdexcept>
#include <string>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

namespace attnscope {
namespace {

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
// The checks include the OS's support for the wider registers (XCR0), not only CPUID bits;
// __builtin_cpu_init is needed if we run before libgcc's own constructor.
// F16C is CPUID leaf 1's bit, read by hand: clang 14's __builtin_cpu_supports does not know "f16c".
// (Every CPU with AVX2 has it; checked all the same.)
bool cpuHasAvx2Fma() {
  __builtin_cpu_init();
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}
bool cpuHasAvx512() { return cpuHasAvx2Fma() && __builtin_cpu_supports("avx512f"); }
#else
bool cpuHasAvx2Fma() { return false; }  // only the scalar code is built
bool cpuHasAvx512() { return false; }
#endif

}  // namespace

bool isaSupported(Isa isa) {
  switch (isa) {
    case Isa::Auto:
    case Isa::Scalar: return true;
    case Isa::Avx2: {
      static const bool has = cpuHasAvx2Fma();
      return has;
    }
    case Isa::Avx512: {
      static const bool has = cpuHasAvx512();
      return has;
    }
  }
  return false;
}

Isa isaBest() {
  if (isaSupported(Isa::Avx512)) return Isa::Avx512;
  if (isaSupported(Isa::Avx2)) return Isa::Avx2;
  return Isa::Scalar;
}

const char* isaName(Isa isa) {
  switch (isa) {
    case Isa::Auto: return "auto";
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
  }
  return "?";
}

Isa runnableIsa(Isa isa, const char* kernels) {
  if (isa == Isa::Auto) isa = isaBest();
  if (!isaSupported(isa))
    throw std::invalid_argument(std::string(kernels) + ": this CPU cannot run the " + isaName(isa) + " version");
  return isa;
}

}  // namespace attnscope

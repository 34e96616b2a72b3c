// The instruction sets our hand-written kernels come in (the MT19937 refill, the fused attention
// tiles, float16 conversion), detected at run time: CI machines may have AVX2 without AVX-512, so nothing is assumed.
#pragma once

namespace attnscope {

enum class Isa { Auto, Scalar, Avx2, Avx512 };  // Avx2 includes FMA and F16C; Avx512 includes them

bool isaSupported(Isa isa);    // Auto and Scalar always are
Isa isaBest();                 // what Auto resolves to on this CPU
const char* isaName(Isa isa);  // "auto", "scalar", "avx2", "avx512"
// `isa` (Auto: isaBest()) when this CPU runs it; otherwise throws std::invalid_argument
// "<kernels>: this CPU cannot run the <isa> version".
Isa runnableIsa(Isa isa, const char* kernels);

}  // namespace attnscope

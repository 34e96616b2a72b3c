// The per-function target attributes of the hand-written SIMD kernels (the packed product, the
// fused attention's tiles, MT19937's refill, the head's logits): each file is built with the
// project's flags, and a SIMD function carries its own instruction set, run only where the CPU was
// found to have it (simd_isa.h), never assumed from the build flags. Where GCC/Clang's attributes
// are missing (another compiler, another architecture) ATTNSCOPE_SIMD_X86 is 0 and only the scalar
// code is built.
//
// In an AVX-512 function, use the intrinsics that start from a given vector (the masked forms with
// a zero source, _mm512_maskz_*) rather than those built on _mm512_undefined_* (_mm512_cvtps_pd):
// GCC 12 warns that the undefined vector may be used uninitialized (bug 105593), an error in an
// AVX2 build, where that warning stays on.
#pragma once

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define ATTNSCOPE_SIMD_X86 1
#include <immintrin.h>
#define ATTNSCOPE_AVX2 __attribute__((target("avx2,fma")))
#define ATTNSCOPE_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) inline
// A register block that must stay a function of its own (inlined, GCC kept some accumulators on
// the stack: packed_linear.cpp).
#define ATTNSCOPE_AVX2_BLOCK __attribute__((target("avx2,fma"), noinline))
// AVX-512F (with AVX2 and FMA, which every AVX-512 CPU has: the 8-wide helpers inline into it).
#define ATTNSCOPE_AVX512 __attribute__((target("avx512f,avx2,fma")))
#define ATTNSCOPE_AVX512_INLINE __attribute__((target("avx512f,avx2,fma"), always_inline)) inline
#else
#define ATTNSCOPE_SIMD_X86 0
#endif

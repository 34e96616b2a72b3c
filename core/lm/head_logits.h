// The output head's logits at a few positions (docs/DESIGN.md §2.6 "The forward pass"): each logit
// a dot product of the position's final row and a row of the head. The app asks for one or two
// positions on every edit, and the head (GPT-2: 50257 × 768, 154 MB) is read from memory each
// time, so each row of it is read once for every position.
//
// Shapes: x P × d (the positions' rows after the final LayerNorm, row-major), head V × d
// (row-major), out P × V (row stride ld_out).
//
// Each logit is float(sumInDouble(d, x[i]·head[v][i])) (engine/sum_in_double.h): the products exact in
// double (two floats' 24-bit significands), summed in 8 lanes, then the tail, then the lanes, in
// order. In double a logit is within an ulp or so of the exact sum, closer than a float product's
// blocked sums (a random GPT-2-sized model's next-token probabilities were 1.1e-5 relative from
// torch's in float lanes). The scalar loop is that definition; the SIMD versions (an 8-double
// register a lane set on AVX-512, two 4-double ones on AVX2) make the same additions in the same
// order, each product exact whether fused or not — the same bits (unit.head_logits).
#pragma once
#include <cstddef>

#include "engine/simd_isa.h"

namespace attnscope {

// out(p, v) for v in [0, rows) and p in [0, P): P ≥ 1. `isa` (Auto: the widest this CPU runs, as
// the fused attention's kernels, ATTNSCOPE_TILE_ISA included) must be one this CPU runs.
void headLogits(const float* x, int P, int d, const float* head, int rows, float* out, std::ptrdiff_t ld_out,
                Isa isa = Isa::Auto);

}  // namespace attnscope

// The reference forward pass: every variant of the chapter computed serially, in the order of the
// seed classes, with every intermediate kept (docs/DESIGN.md §2.1–§2.3). attention_reference.cpp
// is the file to read to know what the engine computes; the fast path (attention_fast.cpp,
// tile_kernels.h) is tested against it (unit.reference_forward, unit.fused), and the engine's
// reference path (computeTrace with ExecutionOptions::fused false, and the configurations the
// fused kernel does not take: the tril route and 'simple' with ÷ row sum) runs its blocks below on
// the thread team, so both give the same bits.
//
// Shapes: B batch elements, T tokens, d_in input width, d_out projection width, H heads,
// w head width (d_out / H for multihead, d_out for the other variants, d_in for simple),
// G projection groups (H for the wrapper, whose heads are modules of their own; else 1).
#pragma once
#include <Eigen/Core>

#include "engine/model_config.h"
#include "engine/parameters.h"
#include "engine/tensor.h"
#include "engine/trace.h"

namespace attnscope {

// A T × w view with a row stride: one head's columns of Q, K or V, or the inputs.
using ConstRows = Eigen::Map<const Matrix, Eigen::Unaligned, Eigen::OuterStride<>>;
// A writable one: a projection's output.
using Rows = Eigen::Map<Matrix, Eigen::Unaligned, Eigen::OuterStride<>>;

// Query rows per block of the reference's matrix products. Eigen picks a product's kernel, and
// with it the order of the sums, from the product's shape, so the block is part of the
// definition: the engine's reference path hands out the same blocks to its threads.
constexpr int kReferenceRowBlock = 32;

// The forward pass of m on x (T × d_in) stacked m.batch_size times, every element and head traced:
// parameters drawn as the seed class draws them, dropout masks as torch draws them, every stage.
// Throws InputError or ComputeError as computeTrace does.
Trace referenceForward(const Matrix& x, const ModelConfig& m, const Limits& limits = {});

// The checks every forward pass makes first: m validates for x (T × d_in), and x is finite.
// Throws InputError naming the field.
void checkForwardInputs(const Matrix& x, const ModelConfig& m, const Limits& limits);
// The ComputeError of a pass whose scores or outputs overflow float32.
[[noreturn]] void throwOverflow();

// The reference's blocks, which the engine's reference path also runs.

// y[r0, r0+n) = x[r0, r0+n) · Wᵀ + b. x: T × in, W: out × in, b: out or empty, y: T × out.
void linearForward(const Matrix& x, const Linear& layer, int r0, int n, Rows y);

// Attention rows [r0, r0+n) of one head. Q, K, V: T × w. Writes rows [o, o+n) of `maps`' scores
// and weights (n × T each; and of its unmasked_weights on the tril route, when it holds them), and
// rows [r0, r0+n) of `context` (T × w). Dropout reads `maps`' dropout_mask rows [o, o+n) (1 =
// kept; empty: no dropout). `maps` is the head's trace (o = r0) or a block of rows (o = 0).
// Returns false if a value is not finite (an overflow).
bool attentionForward(const ModelConfig& m, float scale_divisor, float dropout_scale, const ConstRows& Q,
                      const ConstRows& K, const ConstRows& V, int r0, int n, HeadTrace& maps, int o, Matrix& context);

}  // namespace attnscope

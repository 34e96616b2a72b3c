// Sums in double of the engine's reductions — a row's entropy (head_statistics.h), a trained model's
// LayerNorm mean and variance and its head's logits (lm/gpt_forward.cpp, lm/head_logits.h) — in
// one fixed order for every caller.
#pragma once

namespace attnscope {

constexpr int kSumLanes = 8;

// Σ term(i) for i < d in double, in kSumLanes interleaved partial sums (lane k takes i ≡ k mod 8 in
// order), then the tail past the last whole 8 in order, then the lanes 0 … 7 in order: a chain of
// one sum would wait on each addition (d = 768: 4 cycles a value), lanes vectorize.
template <class Term>
inline double sumInDouble(int d, Term term) {
  double lane[kSumLanes] = {};
  int i = 0;
  for (; i + kSumLanes <= d; i += kSumLanes)
    for (int k = 0; k < kSumLanes; ++k) lane[k] += term(i + k);
  double sum = 0;
  for (; i < d; ++i) sum += term(i);
  for (int k = 0; k < kSumLanes; ++k) sum += lane[k];
  return sum;
}

}  // namespace attnscope

// The packed linear product (core/engine/packed_linear.h), Y = X·Wᵀ + b on weights packed once,
// on every version this CPU runs: against plain double-precision loops written here, for row
// counts around the register blocks (AVX-512 12 rows, AVX2 6), output counts around the 32-wide
// panels, inner widths from 1 to 65 (and 769 to 3072, in blocks of inputs), strided rows at every
// float offset and rows a multiple of 2 KiB apart (read from a copy), with and without a bias. The
// versions compute each output as the same chain of FMAs, so they must agree to the bit with the
// scalar one, and a row's result must not depend on the rows computed beside it.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/packed_linear.h"
#include "guarded_operand.h"

namespace attnscope {
namespace {

using test::bitsOf;
using test::isasToTest;
using test::kInf;
using test::Operand;

struct Case {
  int m, out, in;
  bool bias;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int m : {1, 2, 3, 4, 5, 6, 7, 10, 12, 13, 16, 25})
    for (int o : {1, 6, 16, 17, 32, 33, 70})
      for (int in : {1, 3, 32, 65}) out.push_back({m, o, in, (m + o + in) % 2 == 0});
  return out;
}

std::string where(Isa isa, const Case& c, int offset) {
  return std::string(isaName(isa)) + " m=" + std::to_string(c.m) + " out=" + std::to_string(c.out) +
         " in=" + std::to_string(c.in) + (c.bias ? " bias" : "") + " offset=" + std::to_string(offset);
}

struct Operands {
  Operand x, w, y;
  std::vector<float> bias;
  Operands(const Case& c, int offset, std::mt19937& g)
      : x(c.m, c.in, 3, offset), w(c.out, c.in, 1, offset), y(c.m, c.out, 5, offset) {
    x.fillRandom(g, -2.0f, 2.0f);
    w.fillRandom(g, -1.0f, 1.0f);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    if (c.bias)
      for (int o = 0; o < c.out; ++o) bias.push_back(u(g));
  }
  PackedLinear packed() { return PackedLinear(w.data(), w.rows, w.cols, w.ld, bias.empty() ? nullptr : bias.data()); }
};

TEST(PackedLinear, MatchesDoubleLoopsAndTheScalarDefinitionToTheBit) {
  std::mt19937 g(3);
  for (const Case& c : cases())
    for (int offset : {0, 1, 7}) {
      Operands ops(c, offset, g);
      const PackedLinear p = ops.packed();
      EXPECT_EQ(p.outputs(), c.out);
      EXPECT_EQ(p.inputs(), c.in);
      Operand scalar = ops.y;
      ASSERT_TRUE(p.apply(c.m, ops.x.data(), ops.x.ld, scalar.data(), scalar.ld, Isa::Scalar));
      for (Isa isa : isasToTest()) {
        SCOPED_TRACE(where(isa, c, offset));
        Operand y = ops.y;
        ASSERT_TRUE(p.apply(c.m, ops.x.data(), ops.x.ld, y.data(), y.ld, isa));
        int bad = 0;
        for (int r = 0; r < c.m; ++r)
          for (int o = 0; o < c.out; ++o) {
            double want = ops.bias.empty() ? 0.0 : ops.bias[o], magnitude = std::fabs(want);
            for (int i = 0; i < c.in; ++i) {
              want += static_cast<double>(ops.x.at(r, i)) * ops.w.at(o, i);
              magnitude += std::fabs(static_cast<double>(ops.x.at(r, i)) * ops.w.at(o, i));
            }
            const float got = y.at(r, o);
            if (!(std::fabs(got - want) <= (c.in + 1) * FLT_EPSILON * magnitude + 1e-30) && bad++ < 3)
              ADD_FAILURE() << "y(" << r << ", " << o << ") = " << got << ", want " << want;
            if (bitsOf(got) != bitsOf(scalar.at(r, o)) && bad++ < 3)
              ADD_FAILURE() << "y(" << r << ", " << o << ") differs from the scalar version's bits";
          }
        EXPECT_TRUE(y.guardsIntact()) << "written outside Y";
      }
    }
}

// A trained model's attention is held packed alone and unpacked for the views
// (PackedModule::unpacked): the weights and bias as they were packed, bit for bit, whatever the
// strides, the panels' padding and the slices.
TEST(PackedLinear, UnpacksTheWeightsItPackedToTheBit) {
  std::mt19937 g(23);
  for (const Case& c : cases()) {
    if (c.m != 1) continue;
    Operands o(c, 2, g);
    const PackedLinear packed = o.packed();
    const int ld = c.in + 3;
    std::vector<float> w(static_cast<std::size_t>(c.out) * ld, 7.0f), b(static_cast<std::size_t>(c.out) + 1, 7.0f);
    packed.unpack(0, c.out, w.data(), ld, c.bias ? b.data() : nullptr);
    for (int r = 0; r < c.out; ++r) {
      for (int i = 0; i < c.in; ++i)
        ASSERT_EQ(bitsOf(w[static_cast<std::size_t>(r) * ld + i]), bitsOf(o.w.at(r, i))) << where(Isa::Scalar, c, 2);
      for (int i = c.in; i < ld; ++i) ASSERT_EQ(w[static_cast<std::size_t>(r) * ld + i], 7.0f) << "past a row";
      if (c.bias) {
        ASSERT_EQ(bitsOf(b[static_cast<std::size_t>(r)]), bitsOf(o.bias[static_cast<std::size_t>(r)]));
      }
    }
    EXPECT_EQ(b.back(), 7.0f) << "past the bias";
    // In slices of whole panels: the same.
    const SlicedLinear sliced = packSliced(o.w.data(), c.out, c.in, o.w.ld, o.bias.empty() ? nullptr : o.bias.data(),
                                           PackedLinear::kPanel);
    std::vector<float> again(w.size(), 7.0f), again_b(b.size(), 7.0f);
    sliced.unpack(0, c.out, again.data(), ld, c.bias ? again_b.data() : nullptr);
    EXPECT_EQ(std::memcmp(again.data(), w.data(), w.size() * sizeof(float)), 0) << where(Isa::Scalar, c, 2);
    EXPECT_EQ(std::memcmp(again_b.data(), b.data(), b.size() * sizeof(float)), 0);
    // Any run of outputs: its rows alone.
    for (int o0 = 0; o0 < c.out; o0 += 5) {
      const int o1 = std::min(c.out, o0 + 37);
      std::vector<float> part(static_cast<std::size_t>(o1 - o0) * ld, 7.0f), part_b(static_cast<std::size_t>(o1 - o0));
      sliced.unpack(o0, o1, part.data(), ld, part_b.data());
      EXPECT_EQ(std::memcmp(part.data(), w.data() + static_cast<std::size_t>(o0) * ld, part.size() * sizeof(float)), 0)
          << where(Isa::Scalar, c, 2) << " outputs " << o0 << " … " << o1;
      if (c.bias) {
        EXPECT_EQ(std::memcmp(part_b.data(), b.data() + o0, part_b.size() * sizeof(float)), 0);
      }
    }
  }
}

// A Conv1D's weight (GPT-2's c_attn: in × out, y = x·W) is packed as it lies (WeightView::columns),
// and any strided view alike: the same panels as from the weight in rows, so the same products to
// the bit. Sizes past kLargeBufferBytes too (a mapping of their own, memory.h), sliced as a model's.
TEST(PackedLinear, PacksAWeightInColumnsOrAnyStridesAsInRows) {
  std::mt19937 g(31);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  struct Shape {
    int out, in;
  };
  for (const Shape& c : {Shape{1, 1}, Shape{17, 3}, Shape{33, 65}, Shape{70, 32}, Shape{1000, 769}}) {
    SCOPED_TRACE("out=" + std::to_string(c.out) + " in=" + std::to_string(c.in));
    const int ld_rows = c.in + 3, ld_columns = c.out + 5;
    std::vector<float> rows(static_cast<std::size_t>(c.out) * ld_rows),
        columns(static_cast<std::size_t>(c.in) * ld_columns);
    std::vector<float> strided(static_cast<std::size_t>(c.out) * c.in * 2), bias(static_cast<std::size_t>(c.out));
    for (float& b : bias) b = u(g);
    for (int o = 0; o < c.out; ++o)
      for (int i = 0; i < c.in; ++i) {
        const float w = u(g);
        rows[static_cast<std::size_t>(o) * ld_rows + i] = w;
        columns[static_cast<std::size_t>(i) * ld_columns + 2 + o] = w;  // starting 2 columns in
        strided[(static_cast<std::size_t>(i) * c.out + o) * 2] = w;     // every other float
      }
    const WeightView views[] = {WeightView::columns(columns.data() + 2, c.out, c.in, ld_columns),
                                WeightView{strided.data(), c.out, c.in, 2, 2 * std::ptrdiff_t{c.out}}};
    const PackedLinear want(rows.data(), c.out, c.in, ld_rows, bias.data());
    std::vector<float> x(static_cast<std::size_t>(5) * c.in), y_want(static_cast<std::size_t>(5) * c.out);
    for (float& v : x) v = u(g);
    ASSERT_TRUE(want.apply(5, x.data(), c.in, y_want.data(), c.out));
    std::vector<float> w_want(rows.size()), b_want(bias.size());
    want.unpack(0, c.out, w_want.data(), ld_rows, b_want.data());
    for (const WeightView& view : views) {
      PackedLinear got;
      got.pack(view, bias.data());
      std::vector<float> w_got(rows.size()), b_got(bias.size()), y_got(y_want.size());
      got.unpack(0, c.out, w_got.data(), ld_rows, b_got.data());
      for (int o = 0; o < c.out; ++o)
        ASSERT_EQ(std::memcmp(w_got.data() + static_cast<std::size_t>(o) * ld_rows,
                              w_want.data() + static_cast<std::size_t>(o) * ld_rows, c.in * sizeof(float)),
                  0)
            << "row " << o << " (in_stride " << view.in_stride << ")";
      EXPECT_EQ(std::memcmp(b_got.data(), b_want.data(), bias.size() * sizeof(float)), 0);
      ASSERT_TRUE(got.apply(5, x.data(), c.in, y_got.data(), c.out));
      EXPECT_EQ(std::memcmp(y_got.data(), y_want.data(), y_want.size() * sizeof(float)), 0);
      // Sliced (a model's layers are): each slice from its outputs of the view.
      const SlicedLinear sliced = packSliced(view, bias.data(), PackedLinear::kPanel);
      std::vector<float> w_sliced(rows.size());
      sliced.unpack(0, c.out, w_sliced.data(), ld_rows, nullptr);
      for (int o = 0; o < c.out; ++o)
        ASSERT_EQ(std::memcmp(w_sliced.data() + static_cast<std::size_t>(o) * ld_rows,
                              w_want.data() + static_cast<std::size_t>(o) * ld_rows, c.in * sizeof(float)),
                  0)
            << "sliced, row " << o;
    }
  }
}

TEST(PackedLinear, ARowsResultDoesNotDependOnTheRowsBesideIt) {
  std::mt19937 g(5);
  const Case c{25, 70, 33, true};
  Operands ops(c, 0, g);
  const PackedLinear p = ops.packed();
  for (Isa isa : isasToTest()) {
    Operand all = ops.y;
    p.apply(c.m, ops.x.data(), ops.x.ld, all.data(), all.ld, isa);
    for (int first : {1, 5, 11, 13})
      for (int count : {1, 2, 7, 12}) {
        if (first + count > c.m) continue;
        Operand part = ops.y;
        p.apply(count, &ops.x.at(first, 0), ops.x.ld, &part.at(first, 0), part.ld, isa);
        for (int r = first; r < first + count; ++r)
          for (int o = 0; o < c.out; ++o)
            ASSERT_EQ(bitsOf(part.at(r, o)), bitsOf(all.at(r, o)))
                << isaName(isa) << " rows " << first << "+" << count << ", y(" << r << ", " << o << ")";
      }
  }
}

// Output blocks (the fast path's head-major Q, K, V): each block of `cols` columns lands as its own
// row-major block, `stride` floats after the one before, with the bits of the plain layout, and
// nothing is written between the blocks; a block width that splits a panel (or is 0) is refused.
TEST(PackedLinear, OutputBlocksHoldThePlainLayoutsColumns) {
  std::mt19937 g(7);
  for (const Case& c :
       {Case{13, 96, 20, true}, Case{25, 64, 33, false}, Case{5, 192, 8, true}, Case{13, 96, 1800, true}})
    for (int cols : {32, 64})
      for (Isa isa : isasToTest()) {
        if (c.out % cols != 0) continue;
        SCOPED_TRACE(where(isa, c, 0) + " cols=" + std::to_string(cols));
        Operands ops(c, 0, g);
        const PackedLinear p = ops.packed();
        Operand plain = ops.y;
        ASSERT_TRUE(p.apply(c.m, ops.x.data(), ops.x.ld, plain.data(), plain.ld, isa));
        const int blocks = c.out / cols, gap = 3;  // each block m × cols, then 3 untouched floats
        const std::ptrdiff_t stride = static_cast<std::ptrdiff_t>(c.m) * cols + gap;
        Operand blocked(1, static_cast<int>(stride * blocks), 0, 1);
        ASSERT_TRUE(p.apply(c.m, ops.x.data(), ops.x.ld, blocked.data(), cols, isa, PackedLinear::kAllOutputs,
                            OutputBlocks{cols, stride}));
        for (int k = 0; k < blocks; ++k) {
          for (int r = 0; r < c.m; ++r)
            for (int o = 0; o < cols; ++o)
              ASSERT_EQ(bitsOf(blocked.at(0, static_cast<int>(k * stride + r * cols + o))),
                        bitsOf(plain.at(r, k * cols + o)))
                  << "block " << k << ", y(" << r << ", " << o << ")";
          for (int j = 0; j < gap; ++j)
            EXPECT_TRUE(std::isnan(blocked.at(0, static_cast<int>(k * stride + c.m * cols + j))))
                << "written between blocks";
        }
        EXPECT_TRUE(blocked.guardsIntact());
      }
  std::mt19937 g2(8);
  Operands ops(Case{4, 64, 8, false}, 0, g2);
  Operand y = ops.y;
  EXPECT_THROW(ops.packed().apply(4, ops.x.data(), ops.x.ld, y.data(), 16, Isa::Auto, PackedLinear::kAllOutputs,
                                  OutputBlocks{16, 64}),
               std::invalid_argument);
  EXPECT_THROW(ops.packed().apply(4, ops.x.data(), ops.x.ld, y.data(), 16, Isa::Auto, PackedLinear::kAllOutputs,
                                  OutputBlocks{0, 64}),
               std::invalid_argument);
}

// Products of many inputs go in blocks of inputs (GPT-2's MLP out_proj: 3072), each block
// continuing the chains in Y: every output must still be the one chain of FMAs of the definition,
// fma(x[in−1], w[in−1], … fma(x[0], w[0], b)), written here, for rows in the kernels' blocks and
// the one or two rows that read the panel whole (also where a causal limit leaves a panel two rows
// of many), and an ∞ in the first or the last block must still be reported.
TEST(PackedLinear, ManyInputsKeepTheBitsOfOneChainOfFmas) {
  std::mt19937 g(11);
  const auto oneChain = [](const Operands& ops, int r, int o, int in) {
    float want = ops.bias.empty() ? 0.0f : ops.bias[static_cast<std::size_t>(o)];
    for (int i = 0; i < in; ++i) want = std::fma(ops.x.at(r, i), ops.w.at(o, i), want);
    return want;
  };
  for (int in : {769, 1800, 3072})
    for (int m : {1, 2, 3, 7, 13})
      for (int out : {17, 70}) {
        const Case c{m, out, in, out == 70};
        Operands ops(c, 1, g);
        const PackedLinear p = ops.packed();
        for (Isa isa : isasToTest()) {
          SCOPED_TRACE(where(isa, c, 1));
          Operand y = ops.y;
          ASSERT_TRUE(p.apply(c.m, ops.x.data(), ops.x.ld, y.data(), y.ld, isa));
          int bad = 0;
          for (int r = 0; r < c.m; ++r)
            for (int o = 0; o < c.out; ++o) {
              const float want = oneChain(ops, r, o, c.in);
              if (bitsOf(y.at(r, o)) != bitsOf(want) && bad++ < 3)
                ADD_FAILURE() << "y(" << r << ", " << o << ") = " << y.at(r, o) << ", one chain gives " << want;
            }
          EXPECT_TRUE(y.guardsIntact()) << "written outside Y";
          for (int i : {5, c.in - 1}) {
            Operands inf = ops;
            inf.x.at(c.m - 1, i) = kInf;
            EXPECT_FALSE(p.apply(c.m, inf.x.data(), inf.x.ld, y.data(), y.ld, isa)) << "an ∞ at input " << i;
          }
        }
      }
  // A causal limit of 54 outputs beyond each row: 13 rows of 96 outputs leave the third panel rows 11
  // and 12 (the whole-panel kernel), continuing their chains block after block.
  for (int in : {1800, 3072}) {
    const Case c{13, 96, in, true};
    Operands ops(c, 0, g);
    const PackedLinear p = ops.packed();
    for (Isa isa : isasToTest()) {
      SCOPED_TRACE(where(isa, c, 0) + " output_limit=54");
      Operand y = ops.y;
      ASSERT_TRUE(p.apply(c.m, ops.x.data(), ops.x.ld, y.data(), y.ld, isa, 54));
      int bad = 0;
      for (int r = 0; r < c.m; ++r)
        for (int o = 0; o < std::min(c.out, r + 54); ++o)
          if (bitsOf(y.at(r, o)) != bitsOf(oneChain(ops, r, o, c.in)) && bad++ < 3)
            ADD_FAILURE() << "y(" << r << ", " << o << ") is not one chain's";
      EXPECT_TRUE(y.guardsIntact()) << "written outside Y";
    }
  }
}

// Rows of X a multiple of 2 KiB apart are read from a copy at another stride (aliasFreeStride): the
// same chains, so the same bits; X itself untouched; a row or two read X as it lies.
TEST(PackedLinear, RowsAMultipleOf2KiBApartKeepTheirBits) {
  std::mt19937 g(13);
  for (int in : {509, 1021, 3069})  // + 3 floats of padding: rows 512, 1024, 3072 floats apart
    for (int m : {1, 2, 3, 13, 25}) {
      const Case c{m, 70, in, true};
      Operands ops(c, 0, g);
      ASSERT_EQ(ops.x.ld % 512, 0);
      const PackedLinear p = ops.packed();
      const Operand x_before = ops.x;
      for (Isa isa : isasToTest()) {
        SCOPED_TRACE(where(isa, c, 0) + " ldx=" + std::to_string(ops.x.ld));
        Operand y = ops.y;
        ASSERT_TRUE(p.apply(c.m, ops.x.data(), ops.x.ld, y.data(), y.ld, isa));
        int bad = 0;
        for (int r = 0; r < c.m; ++r)
          for (int o = 0; o < c.out; ++o) {
            float want = ops.bias[static_cast<std::size_t>(o)];
            for (int i = 0; i < c.in; ++i) want = std::fma(ops.x.at(r, i), ops.w.at(o, i), want);
            if (bitsOf(y.at(r, o)) != bitsOf(want) && bad++ < 3)
              ADD_FAILURE() << "y(" << r << ", " << o << ") = " << y.at(r, o) << ", one chain gives " << want;
          }
        EXPECT_TRUE(y.guardsIntact()) << "written outside Y";
        EXPECT_EQ(std::memcmp(ops.x.buf.data(), x_before.buf.data(), ops.x.buf.size() * sizeof(float)), 0)
            << "X changed";
        Operands inf = ops;
        inf.x.at(c.m - 1, c.in - 1) = kInf;
        EXPECT_FALSE(p.apply(c.m, inf.x.data(), inf.x.ld, y.data(), y.ld, isa)) << "an ∞ in X's last row";
      }
    }
}

TEST(PackedLinear, SaysWhenAnOutputIsNotFinite) {
  std::mt19937 g(9);
  for (int out : {5, 32, 40})
    for (Isa isa : isasToTest()) {
      SCOPED_TRACE(std::string(isaName(isa)) + " out=" + std::to_string(out));
      const Case c{13, out, 8, true};
      Operands ops(c, 0, g);
      const PackedLinear p = ops.packed();
      Operand y = ops.y;
      EXPECT_TRUE(p.apply(c.m, ops.x.data(), ops.x.ld, y.data(), y.ld, isa));
      for (int row : {0, 12}) {  // an ∞ input in the first and in the last row (a block's tail)
        Operands bad = ops;
        bad.x.at(row, 3) = kInf;
        EXPECT_FALSE(p.apply(c.m, bad.x.data(), bad.x.ld, y.data(), y.ld, isa)) << "row " << row;
      }
      Operands huge = ops;  // finite inputs whose sum overflows
      for (int i = 0; i < c.in; ++i) huge.x.at(6, i) = 3e38f;
      for (int i = 0; i < c.in; ++i) huge.w.at(out - 1, i) = 1.0f;
      const PackedLinear q = huge.packed();
      EXPECT_FALSE(q.apply(c.m, huge.x.data(), huge.x.ld, y.data(), y.ld, isa)) << "overflow in the last output";
    }
}

}  // namespace
}  // namespace attnscope

// Runs of float16 and bfloat16 converted to float32 (formats/tensor_file_kinds.h elementsToFloat;
// docs/DESIGN.md §2.6), against a reference that is not ours: every one of the 65536 bit patterns
// of each, through each path this CPU runs (scalar, F16C, AVX-512, auto), compared bit for bit
// with what Debian's NumPy gives for float16 (np.float16 → np.float32) and Debian's torch for
// bfloat16 (NumPy has none), both run here through ATTNSCOPE_PYTHON (/usr/bin/python3,
// python3-numpy and python3-torch: the [test] packages). Then short runs at every kind of start
// and length (the vector loops' tails), big-endian data, and the three kinds of files whose
// floats() use the runs: safetensors, .npz (C and Fortran order), .pth (contiguous, row and
// strided views).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "formats/tensor_file.h"
#include "formats/tensor_file_kinds.h"
#include "zip_writer.h"

using namespace attnscope;
using attnscope::test::zip;

#ifndef ATTNSCOPE_PYTHON
#define ATTNSCOPE_PYTHON "/usr/bin/python3"
#endif

namespace {

// The float32 bits of every float16 (NumPy) and bfloat16 (torch) pattern, index = the pattern.
// NumPy keeps a signalling NaN signalling (0x7c01 → 0x7f802000), as halfToFloat does.
struct Reference {
  std::vector<std::uint32_t> f16, bf16;
  std::string error;  // why there is none
};

Reference loadReference() {
  const char* script =
      "import sys\n"
      "import numpy as np\n"
      "import torch\n"
      "u = np.arange(65536, dtype=np.uint16)\n"
      "f16 = u.view(np.float16).astype(np.float32).view(\"<u4\")\n"
      "bf16 = torch.from_numpy(u.view(np.int16).copy()).view(torch.bfloat16).float().numpy().view(\"<u4\")\n"
      "sys.stdout.buffer.write(f16.tobytes() + bf16.tobytes())\n";
  Reference r;
  const std::string command = std::string(ATTNSCOPE_PYTHON) + " -c '" + script + "'";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    r.error = "cannot run " + command;
    return r;
  }
  std::string bytes;
  char buffer[65536];
  for (std::size_t got; (got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) bytes.append(buffer, got);
  const int status = pclose(pipe);
  if (status != 0 || bytes.size() != 2 * 65536 * 4) {
    r.error = std::string(ATTNSCOPE_PYTHON) + " with NumPy and torch (python3-numpy, python3-torch) gave " +
              std::to_string(bytes.size()) + " bytes, status " + std::to_string(status) + ", expected " +
              std::to_string(2 * 65536 * 4) + " bytes";
    return r;
  }
  auto word = [&](std::size_t i) {
    const auto* b = reinterpret_cast<const unsigned char*>(bytes.data() + 4 * i);
    return static_cast<std::uint32_t>(b[0]) | static_cast<std::uint32_t>(b[1]) << 8 |
           static_cast<std::uint32_t>(b[2]) << 16 | static_cast<std::uint32_t>(b[3]) << 24;
  };
  for (std::size_t i = 0; i < 65536; ++i) r.f16.push_back(word(i));
  for (std::size_t i = 0; i < 65536; ++i) r.bf16.push_back(word(65536 + i));
  return r;
}

const Reference& reference() {
  static const Reference r = loadReference();
  return r;
}

// Every pattern 0 … 65535 as 2-byte elements, little-endian (or big-endian).
std::string allPatterns(bool big = false) {
  std::string out;
  for (unsigned h = 0; h < 65536; ++h) {
    const char lo = static_cast<char>(h & 0xff), hi = static_cast<char>(h >> 8);
    out += big ? hi : lo;
    out += big ? lo : hi;
  }
  return out;
}

std::uint32_t bitsOf(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

std::string hex(std::uint32_t v) {
  char s[16];
  std::snprintf(s, sizeof s, "0x%08x", v);
  return s;
}

// The paths this CPU runs; the others are named in `missing`.
std::vector<Isa> paths(std::string* missing = nullptr) {
  std::vector<Isa> out;
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Auto}) {
    if (isaSupported(isa))
      out.push_back(isa);
    else if (missing != nullptr)
      *missing += std::string(*missing == "" ? "" : ", ") + isaName(isa);
  }
  return out;
}

// Mismatches of got[i] against want[first + i] (want indexed modulo its size), the first few shown.
std::string mismatches(const float* got, std::size_t n, const std::vector<std::uint32_t>& want, std::size_t first) {
  std::string out;
  std::size_t count = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t w = want[(first + i) % want.size()];
    if (bitsOf(got[i]) == w) continue;
    if (count++ < 8)
      out += " pattern " + hex(static_cast<std::uint32_t>((first + i) % want.size())) + ": got " + hex(bitsOf(got[i])) +
             ", want " + hex(w) + ";";
  }
  return count == 0 ? "" : std::to_string(count) + " of " + std::to_string(n) + " differ:" + out;
}

#define ASSERT_REFERENCE() ASSERT_EQ(reference().error, "") << "the reference values could not be made"

}  // namespace

TEST(HalfRuns, ThePathsThisCpuRuns) {
  std::string missing;
  std::string ran;
  for (Isa isa : paths(&missing)) ran += std::string(ran.empty() ? "" : ", ") + isaName(isa);
  std::printf("[   NOTE   ] tested here: %s; auto is %s%s%s\n", ran.c_str(), isaName(isaBest()),
              missing.empty() ? "" : "; not run by this CPU, so not tested: ", missing.c_str());
  EXPECT_NE(isaBest(), Isa::Auto);
  for (Isa isa : {Isa::Avx2, Isa::Avx512})
    if (!isaSupported(isa)) {
      float out = 0;
      EXPECT_THROW(elementsToFloat(FloatDtype::F16, reinterpret_cast<const unsigned char*>("\0\0"), 1, &out, false,
                                   isa),
                   std::invalid_argument);
    }
}

TEST(HalfRuns, EveryFloat16PatternIsNumPysOnEveryPath) {
  ASSERT_REFERENCE();
  const Reference& ref = reference();
  // The reference itself: signalling NaNs stay signalling, quiet ones keep their payload.
  EXPECT_EQ(ref.f16[0x7c01], 0x7f802000u);
  EXPECT_EQ(ref.f16[0xfd55], 0xffaaa000u);
  EXPECT_EQ(ref.f16[0x7e01], 0x7fc02000u);
  EXPECT_EQ(ref.f16[0x0001], 0x33800000u);  // the smallest subnormal, 2^-24
  const std::string bytes = allPatterns();
  for (Isa isa : paths()) {
    std::vector<float> out(65536);
    elementsToFloat(FloatDtype::F16, reinterpret_cast<const unsigned char*>(bytes.data()), 65536, out.data(), false,
                    isa);
    EXPECT_EQ(mismatches(out.data(), 65536, ref.f16, 0), "") << isaName(isa);
  }
  // halfToFloat, the reference the paths fall back on.
  std::vector<float> one(65536);
  for (unsigned h = 0; h < 65536; ++h) one[h] = halfToFloat(static_cast<std::uint16_t>(h));
  EXPECT_EQ(mismatches(one.data(), 65536, ref.f16, 0), "") << "halfToFloat";
}

TEST(HalfRuns, EveryBfloat16PatternIsTorchsOnEveryPath) {
  ASSERT_REFERENCE();
  const Reference& ref = reference();
  const std::string bytes = allPatterns();
  for (Isa isa : paths()) {
    std::vector<float> out(65536);
    elementsToFloat(FloatDtype::BF16, reinterpret_cast<const unsigned char*>(bytes.data()), 65536, out.data(), false,
                    isa);
    EXPECT_EQ(mismatches(out.data(), 65536, ref.bf16, 0), "") << isaName(isa);
  }
}

TEST(HalfRuns, BigEndianDataReadsAlike) {
  ASSERT_REFERENCE();
  const std::string bytes = allPatterns(true);
  for (Isa isa : paths())
    for (FloatDtype dtype : {FloatDtype::F16, FloatDtype::BF16}) {
      std::vector<float> out(65536);
      elementsToFloat(dtype, reinterpret_cast<const unsigned char*>(bytes.data()), 65536, out.data(), true, isa);
      EXPECT_EQ(mismatches(out.data(), 65536, dtype == FloatDtype::F16 ? reference().f16 : reference().bf16, 0), "")
          << isaName(isa) << (dtype == FloatDtype::F16 ? " F16" : " BF16");
    }
}

// Short runs: every length up to past two AVX-512 blocks, from starts that put finite values,
// ±∞ and NaNs in the blocks and in the tails (a run wraps from 0xffff to 0), the source one byte
// off its alignment or not, the output at any float; nothing outside out[0, n) is written.
TEST(HalfRuns, ShortRunsFromAnyStartConvertTheirTails) {
  ASSERT_REFERENCE();
  const std::string bytes = allPatterns() + allPatterns();  // a run may wrap past 0xffff
  std::string shifted = " " + bytes;                        // the same, one byte further
  const std::vector<std::size_t> starts = {0x0000, 0x03f9, 0x3bfb, 0x7bf9, 0x7bff, 0x7c00, 0x7c05,
                                           0x7df8, 0xfbfd, 0xfc00, 0xfff0, 0xfffb, 0xffff};
  const std::uint32_t kGuard = 0xdeadbeef;
  float guard;
  std::memcpy(&guard, &kGuard, 4);
  for (Isa isa : paths())
    for (FloatDtype dtype : {FloatDtype::F16, FloatDtype::BF16}) {
      const auto& want = dtype == FloatDtype::F16 ? reference().f16 : reference().bf16;
      for (std::size_t n = 1; n <= 40; ++n)
        for (std::size_t start : starts)
          for (int misaligned : {0, 1})
            for (std::size_t at : {0, 1, 3}) {
              const auto* src = reinterpret_cast<const unsigned char*>(misaligned ? shifted.data() + 1 : bytes.data());
              std::vector<float> out(at + n + 20, guard);
              elementsToFloat(dtype, src + 2 * start, n, out.data() + at, false, isa);
              const std::string where = std::string(isaName(isa)) + (dtype == FloatDtype::F16 ? " F16" : " BF16") +
                                        " n " + std::to_string(n) + " from " + hex(static_cast<std::uint32_t>(start)) +
                                        (misaligned ? " misaligned" : "") + " into out + " + std::to_string(at);
              ASSERT_EQ(mismatches(out.data() + at, n, want, start), "") << where;
              for (std::size_t i = 0; i < out.size(); ++i)
                if (i < at || i >= at + n) {
                  ASSERT_EQ(bitsOf(out[i]), kGuard) << where << ": out[" << i << "] written";
                }
            }
    }
}

TEST(HalfRuns, Float32AndFloat64RunsAreElementToFloats) {
  // Patterns spread over float64's and float32's exponents, NaNs and infinities among them.
  std::string f64, f32;
  std::uint64_t x = 0x9e3779b97f4a7c15u;
  for (int i = 0; i < 4099; ++i) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    for (int b = 0; b < 8; ++b) f64 += static_cast<char>(x >> (8 * b));
    for (int b = 0; b < 4; ++b) f32 += static_cast<char>(x >> (32 + 8 * b));
  }
  for (Isa isa : paths())
    for (bool big : {false, true})
      for (const auto& [dtype, bytes, size] :
           {std::make_tuple(FloatDtype::F64, &f64, 8), std::make_tuple(FloatDtype::F32, &f32, 4)}) {
        const auto* p = reinterpret_cast<const unsigned char*>(bytes->data());
        const std::size_t n = bytes->size() / static_cast<std::size_t>(size);
        std::vector<float> out(n);
        elementsToFloat(dtype, p, n, out.data(), big, isa);
        std::size_t differ = 0;
        for (std::size_t i = 0; i < n; ++i)
          differ += bitsOf(out[i]) != bitsOf(elementToFloat(dtype, p + i * static_cast<std::size_t>(size), big));
        EXPECT_EQ(differ, 0u) << isaName(isa) << (dtype == FloatDtype::F64 ? " F64" : " F32")
                              << (big ? " big-endian" : "");
      }
}

// ---- the files ----------------------------------------------------------------------------

namespace {

// A tensor's values against want[index(c)] for each C-order element c.
template <class Index>
std::string tensorMismatches(const FloatTensor& t, const std::vector<std::uint32_t>& want, Index index) {
  std::string out;
  std::size_t count = 0;
  for (std::int64_t c = 0; c < t.elements(); ++c) {
    const std::uint32_t w = want[index(c)];
    if (bitsOf(t.data[c]) == w) continue;
    if (count++ < 8) out += " element " + std::to_string(c) + ": got " + hex(bitsOf(t.data[c])) + ", want " + hex(w);
  }
  return count == 0 ? "" : std::to_string(count) + " differ:" + out;
}

std::string npy(const std::string& descr, bool fortran, const std::string& shape, const std::string& data) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                     ", 'shape': " + shape + ", }";
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string out = std::string("\x93NUMPY\x01\x00", 8);
  attnscope::test::put16(out, static_cast<unsigned>(dict.size()));
  return out + dict + data;
}

// pickle's BININT, for sizes past BININT1's 255.
std::string int4(std::int64_t v) {
  std::string s = "J";
  attnscope::test::put32(s, static_cast<unsigned long>(v));
  return s;
}
std::string u8(const std::string& s) { return "\x8c" + std::string(1, static_cast<char>(s.size())) + s; }

// _rebuild_tensor_v2(('storage', torch.<storage>, key, 'cpu', numel), offset, size, stride, False, OrderedDict())
std::string tensorPickle(const std::string& storage, const std::string& key, std::int64_t numel, std::int64_t offset,
                         std::vector<std::int64_t> size, std::vector<std::int64_t> stride) {
  std::string p = "ctorch._utils\n_rebuild_tensor_v2\n(";
  p += "(" + u8("storage") + "ctorch\n" + storage + "\n" + u8(key) + u8("cpu") + int4(numel) + "tQ";
  p += int4(offset) + "(";
  for (std::int64_t s : size) p += int4(s);
  p += "t(";
  for (std::int64_t s : stride) p += int4(s);
  p += "t\x89"
       "ccollections\nOrderedDict\n)RtR";
  return p;
}

}  // namespace

TEST(HalfRuns, SafetensorsNpzAndPthFilesReadEveryPattern) {
  ASSERT_REFERENCE();
  const Reference& ref = reference();
  const std::string little = allPatterns(), big = allPatterns(true);
  auto same = [](std::int64_t c) { return static_cast<std::size_t>(c); };

  // safetensors: F16 then BF16, [256, 256] each, their data 2 bytes past an 8-aligned place.
  std::string header = R"({"h":{"dtype":"F16","shape":[256,256],"data_offsets":[0,131072]},)"
                       R"("b":{"dtype":"BF16","shape":[256,256],"data_offsets":[131072,262144]}})";
  while ((8 + header.size()) % 8 != 2) header += ' ';
  std::string st(8, '\0');  // the header's length, little-endian
  st[0] = static_cast<char>(header.size() & 0xff);
  st[1] = static_cast<char>(header.size() >> 8);
  const auto safetensors = TensorFile::fromBytes(st + header + little + little, "all.safetensors");
  EXPECT_EQ(tensorMismatches(safetensors->floats("h"), ref.f16, same), "") << "safetensors F16";
  EXPECT_EQ(tensorMismatches(safetensors->floats("b"), ref.bf16, same), "") << "safetensors BF16";

  // .npz: little- and big-endian float16, and Fortran order (element (r, c) at c · 256 + r).
  const auto npz = TensorFile::fromBytes(zip({{"h.npy", npy("<f2", false, "(65536,)", little)},
                                              {"big.npy", npy(">f2", false, "(256, 256)", big)},
                                              {"f.npy", npy("<f2", true, "(256, 256)", little)}}),
                                         "all.npz");
  EXPECT_EQ(tensorMismatches(npz->floats("h"), ref.f16, same), "") << "npz <f2";
  EXPECT_EQ(tensorMismatches(npz->floats("big"), ref.f16, same), "") << "npz >f2";
  EXPECT_EQ(tensorMismatches(npz->floats("f"), ref.f16,
                             [](std::int64_t c) { return static_cast<std::size_t>(c % 256 * 256 + c / 256); }),
            "")
      << "npz Fortran order";

  // .pth: a contiguous view, rows of stride 1 that are not contiguous (offset 3, 255 of each 256:
  // odd lengths, each row a run), a transpose (stride 256 along rows), and bfloat16.
  const std::string pkl = std::string("\x80\x02}(") + u8("c") +
                          tensorPickle("HalfStorage", "0", 65536, 0, {256, 256}, {256, 1}) + u8("rows") +
                          tensorPickle("HalfStorage", "0", 65536, 3, {255, 255}, {256, 1}) + u8("t") +
                          tensorPickle("HalfStorage", "0", 65536, 0, {256, 256}, {1, 256}) + u8("b") +
                          tensorPickle("BFloat16Storage", "1", 65536, 0, {65536}, {1}) + "u.";
  for (bool big_endian : {false, true}) {
    const std::string& data = big_endian ? big : little;
    const auto pth = TensorFile::fromBytes(zip({{"archive/data.pkl", pkl},
                                                {"archive/byteorder", big_endian ? "big" : "little"},
                                                {"archive/data/0", data},
                                                {"archive/data/1", data},
                                                {"archive/version", "3\n"}}),
                                           "all.pth");
    const std::string order = big_endian ? " (big-endian)" : "";
    EXPECT_EQ(tensorMismatches(pth->floats("c"), ref.f16, same), "") << "pth contiguous" << order;
    EXPECT_EQ(tensorMismatches(pth->floats("rows"), ref.f16,
                               [](std::int64_t c) { return static_cast<std::size_t>(3 + c / 255 * 256 + c % 255); }),
              "")
        << "pth rows" << order;
    EXPECT_EQ(tensorMismatches(pth->floats("t"), ref.f16,
                               [](std::int64_t c) { return static_cast<std::size_t>(c % 256 * 256 + c / 256); }),
              "")
        << "pth transposed" << order;
    EXPECT_EQ(tensorMismatches(pth->floats("b"), ref.bf16, same), "") << "pth BF16" << order;
  }
}

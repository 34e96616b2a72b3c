// Files of named tensors (formats/tensor_file.h, zip_archive.h, torch_pickle.h; docs/DESIGN.md
// §2.6) on small inputs made here byte by byte: the zip reader's caps (declared size, and a bomb
// caught while inflating), the restricted unpickler (what it builds, what it refuses, its bounds),
// safetensors' zero copy, and the float16 conversion against its definition for all 65536 values.
// What torch, NumPy and HF-layout writers produce is checked by tests/cli/test_tensors.py.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "engine/errors.h"
#include "formats/tensor_file.h"
#include "formats/tensor_file_kinds.h"
#include "formats/torch_pickle.h"
#include "formats/zip_archive.h"
#include "zip_writer.h"

using namespace attnscope;
using namespace std::string_literals;
using attnscope::test::put16;
using attnscope::test::put32;
using attnscope::test::zip;
using attnscope::test::ZipItem;

namespace {

template <class F>
std::string errorOf(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

ZipArchive archive(const std::string& bytes) {
  return ZipArchive::fromBytes(std::make_shared<const std::string>(bytes), "z", "zip");
}

// ---- pickles ------------------------------------------------------------------------------

std::string u8(const std::string& s) {  // SHORT_BINUNICODE
  return "\x8c" + std::string(1, static_cast<char>(s.size())) + s;
}
std::string int1(int v) { return "K" + std::string(1, static_cast<char>(v)); }

// _rebuild_tensor_v2(('storage', torch.FloatStorage, key, 'cpu', numel), offset, size, stride, False, OrderedDict())
std::string tensorPickle(const std::string& key, int numel, int offset, std::vector<int> size, std::vector<int> stride,
                         const std::string& storage = "FloatStorage") {
  std::string p = "ctorch._utils\n_rebuild_tensor_v2\n(";
  p += "(" + u8("storage") + "ctorch\n" + storage + "\n" + u8(key) + u8("cpu") + int1(numel) + "tQ";
  p += int1(offset) + "(";
  for (int s : size) p += int1(s);
  p += "t(";
  for (int s : stride) p += int1(s);
  p += "t\x89"
       "ccollections\nOrderedDict\n)RtR";
  return p;
}

std::string floats(std::initializer_list<float> v) {
  std::string out;
  for (float f : v) out.append(reinterpret_cast<const char*>(&f), 4);
  return out;
}

}  // namespace

// ---- the zip reader ----------------------------------------------------------------------

TEST(ZipArchive, ListsAndReadsStoredAndDeflatedEntries) {
  const std::string text(1000, 'a');
  const ZipArchive z = archive(zip({{"a.txt", "hello", false}, {"dir/b.bin", text, true}}));
  ASSERT_EQ(z.entries().size(), 2u);
  EXPECT_EQ(z.entries()[1].name, "dir/b.bin");
  EXPECT_EQ(z.entries()[1].method, 8);
  EXPECT_EQ(z.entries()[1].size, 1000u);
  EXPECT_EQ(z.read(0, 100), "hello");
  EXPECT_EQ(z.read(1, 1000), text);
  EXPECT_EQ(z.readPrefix(1, 10), std::string(10, 'a'));
  EXPECT_EQ(*z.find("dir/b.bin"), 1u);
  EXPECT_FALSE(z.find("c"));
}

TEST(ZipArchive, CapsTheDeclaredSizeAndCatchesABombWhileInflating) {
  const std::string zeros(8 << 20, '\0');
  // Declared honestly: refused from the central directory, before anything is read.
  EXPECT_EQ(errorOf([&] {
              archive(zip({{"big", zeros, true}})).read(0, 1 << 20);
            }),
            "z: entry 'big' holds 8388608 bytes, more than the limit of 1048576 bytes");
  // Declared as 16 bytes: the read stops at byte 17.
  EXPECT_EQ(errorOf([&] {
              archive(zip({{"bomb", zeros, true, 16}})).read(0, 1 << 20);
            }),
            "z: a damaged zip file: entry 'bomb' inflates to more than its declared 16 bytes");
  // Declared larger than it inflates to.
  EXPECT_EQ(errorOf([&] {
              archive(zip({{"short", "abc", true, 10}})).read(0, 100);
            }),
            "z: a damaged zip file: entry 'short' does not inflate to its 10 bytes");
}

TEST(ZipArchive, RefusesDamage) {
  std::string z = zip({{"a.txt", "hello world", true}});
  EXPECT_EQ(errorOf([&] { archive("not a zip at all, not even close to one"); }),
            "z: a damaged zip file: no end of central directory record");
  std::string bad_crc = z;
  const std::size_t central = z.find("PK\x01\x02");
  bad_crc[central + 16] = static_cast<char>(bad_crc[central + 16] ^ 1);
  const std::string crc_error = errorOf([&] { archive(bad_crc).read(0, 100); });
  EXPECT_TRUE(crc_error == "z: a damaged zip file: entry 'a.txt' fails its CRC check" ||
              crc_error == "z: a damaged zip file: its central directory and its entries disagree")
      << crc_error;
  std::string method = z;
  method[central + 10] = 12;
  method[8] = 12;  // the local header's method too
  EXPECT_NE(errorOf([&] { archive(method).read(0, 100); }).find("compression method 12"), std::string::npos);
}

// ---- float16 ------------------------------------------------------------------------------

TEST(Dtypes, HalfToFloatIsExactForEveryValue) {
  for (unsigned h = 0; h < 65536; ++h) {
    const int sign = h >> 15, exponent = (h >> 10) & 31, mantissa = h & 1023;
    double want;
    if (exponent == 31)
      want = mantissa ? std::nan("") : INFINITY;
    else if (exponent == 0)
      want = std::ldexp(mantissa, -24);
    else
      want = std::ldexp(1024 + mantissa, exponent - 25);
    if (sign) want = -want;
    const float got = halfToFloat(static_cast<std::uint16_t>(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << h;
    } else {
      EXPECT_EQ(got, static_cast<float>(want)) << h;
      EXPECT_EQ(std::signbit(got), sign == 1) << h;
    }
  }
  EXPECT_EQ(bfloat16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(bfloat16ToFloat(0xc020), -2.5f);
}

// ---- the unpickler -------------------------------------------------------------------------

TEST(TorchPickle, ReadsAStateDictWithViewsAndNesting) {
  // {"w": tensor, "opt": {"state": {0: {"step": 3, "t": tensor}}, "lr": 0.1}}
  const std::string p = "\x80\x02}q\x00("s + u8("w") + tensorPickle("0", 6, 1, {2, 2}, {1, 2}) + u8("opt") + "}(" +
                        u8("state") + "}" + int1(0) + "}(" + u8("step") + int1(3) + u8("t") +
                        tensorPickle("0", 6, 0, {3}, {2}) + "u" + "s" + u8("lr") + "G?\xb9\x99\x99\x99\x99\x99\x9a" +
                        "u" + "u.";
  const PickledStateDict sd = readTorchPickle(p, "f");
  ASSERT_EQ(sd.tensors.size(), 2u);
  EXPECT_EQ(sd.tensors[0].name, "w");
  EXPECT_EQ(sd.tensors[0].offset, 1);
  EXPECT_EQ(sd.tensors[0].stride, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(sd.tensors[1].name, "opt.state.0.t");
  EXPECT_EQ(sd.tensors[1].dtype, "F32");
  EXPECT_EQ(sd.storages.at("0").numel, 6);
}

TEST(TorchPickle, RefusesOtherGlobalsBeforeAnythingUsesThem) {
  EXPECT_EQ(errorOf([] {
              readTorchPickle(
                  "\x80\x02"
                  "cos\nsystem\nX\x02\x00\x00\x00ls\x85R."s,
                  "f");
            }),
            "f: its pickle names os.system, which a state_dict never uses: refused, nothing run (a state_dict is "
            "read as data; nothing in a file is ever executed)");
  EXPECT_EQ(errorOf([] {
              readTorchPickle(
                  "\x80\x02"
                  "c__main__\nGPTModel\n)\x81}b.",
                  "f");
            }),
            "f: the file holds a pickled object of class __main__.GPTModel, not a state_dict: save "
            "model.state_dict() instead (a state_dict is read as data; nothing in a file is ever executed)");
  EXPECT_EQ(errorOf([] { readTorchPickle("\x80\x04" + u8("builtins") + u8("eval") + "\x93.", "f"); }),
            "f: its pickle names builtins.eval, which a state_dict never uses: refused, nothing run (a state_dict is "
            "read as data; nothing in a file is ever executed)");
  EXPECT_EQ(errorOf([] { readTorchPickle("\x80\x02I1\n.", "f"); }),
            "f: data.pkl: opcode 0x49 is not one torch.save writes for a state_dict (at byte 2)");
  EXPECT_EQ(errorOf([] { readTorchPickle("\x80\x02}", "f"); }),
            "f: data.pkl: it ends before its STOP opcode (at byte 3)");
  EXPECT_EQ(errorOf([] {
              readTorchPickle(
                  "\x80\x02]"
                  ".",
                  "f");
            }),
            "f: the file holds a list, not a state_dict (a dict of tensors): save model.state_dict()");
}

TEST(TorchPickle, BoundsDepthCyclesAndSize) {
  // 100,000 nested dicts: built without recursion, refused when flattened.
  std::string deep = "\x80\x02";
  for (int i = 0; i < 100000; ++i) deep += "}" + u8("k");
  deep += "}";
  for (int i = 0; i < 100000; ++i) deep += "s";
  deep += ".";
  EXPECT_EQ(errorOf([&] { readTorchPickle(deep, "f"); }),
            "f: dicts nested deeper than 64 levels (or a dict inside itself)");
  // A dict that holds itself.
  EXPECT_EQ(errorOf([] { readTorchPickle("\x80\x02}q\x00"s + u8("me") + "h\x00s."s, "f"); }),
            "f: dicts nested deeper than 64 levels (or a dict inside itself)");
  PickleLimits small;
  small.max_objects = 1000;
  std::string many = "\x80\x02](";
  for (int i = 0; i < 2000; ++i) many += "N";
  many += "e.";
  EXPECT_NE(errorOf([&] { readTorchPickle(many, "f", small); }).find("more than 1000 objects"), std::string::npos);
}

TEST(TensorFile, PthHonoursOffsetsStridesAndSharedStorages) {
  const std::string pkl = std::string("\x80\x02}(") + u8("t") + tensorPickle("0", 6, 1, {2, 2}, {1, 2}) + u8("u") +
                          tensorPickle("0", 6, 0, {3}, {2}) + "u.";
  const std::string bytes = zip({{"archive/data.pkl", pkl},
                                 {"archive/byteorder", "little"},
                                 {"archive/data/0", floats({0, 1, 2, 3, 4, 5})},
                                 {"archive/version", "3\n"}});
  const auto file = TensorFile::fromBytes(bytes, "m.pth");
  EXPECT_EQ(file->format(), "pth");
  const FloatTensor t = file->floats("t");  // [[1, 3], [2, 4]]: a transposed view at offset 1
  EXPECT_EQ(std::vector<float>(t.data, t.data + 4), (std::vector<float>{1, 3, 2, 4}));
  const FloatTensor u = file->floats("u");
  EXPECT_EQ(std::vector<float>(u.data, u.data + 3), (std::vector<float>{0, 2, 4}));
  // A view past its storage's end is refused when the file opens.
  const std::string past = std::string("\x80\x02}(") + u8("t") + tensorPickle("0", 6, 3, {2, 2}, {1, 2}) + "u.";
  EXPECT_EQ(errorOf([&] {
              TensorFile::fromBytes(zip({{"a/data.pkl", past}, {"a/data/0", floats({0, 1, 2, 3, 4, 5})}}), "m.pth");
            }),
            "m.pth: tensor t: its view (offset 3, size and stride) reaches element 6 of a storage of 6");
}

TEST(TensorFile, PthTensorsViewingAStorageAlikeShareOneCopy) {
  // A tied model's tok_emb and out_head: one storage, two names, the same view. Read once, their
  // values are one block of memory; another view of it (w: the transpose) has its own.
  const std::string pkl = std::string("\x80\x02}(") + u8("e") + tensorPickle("0", 6, 0, {3, 2}, {2, 1}) + u8("h") +
                          tensorPickle("0", 6, 0, {3, 2}, {2, 1}) + u8("w") + tensorPickle("0", 6, 0, {2, 3}, {1, 2}) +
                          "u.";
  const std::string bytes = zip({{"archive/data.pkl", pkl},
                                 {"archive/byteorder", "little"},
                                 {"archive/data/0", floats({0, 1, 2, 3, 4, 5})},
                                 {"archive/version", "3\n"}});
  const auto file = TensorFile::fromBytes(bytes, "tied.pth");
  const FloatTensor e = file->floats("e"), h = file->floats("h"), w = file->floats("w");
  EXPECT_EQ(e.data, h.data);
  EXPECT_EQ(e.owner, h.owner);
  EXPECT_NE(w.data, e.data);
  EXPECT_EQ(std::vector<float>(h.data, h.data + 6), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(std::vector<float>(w.data, w.data + 6), (std::vector<float>{0, 2, 4, 1, 3, 5}));
  EXPECT_EQ(h.shape, (std::vector<std::int64_t>{3, 2}));
  // Converted views are shared too (two names of the transpose); let go, a tensor reads again.
  const std::string twice = std::string("\x80\x02}(") + u8("a") + tensorPickle("0", 6, 0, {2, 3}, {1, 2}) + u8("b") +
                            tensorPickle("0", 6, 0, {2, 3}, {1, 2}) + "u.";
  const auto views = TensorFile::fromBytes(zip({{"archive/data.pkl", twice},
                                                {"archive/byteorder", "little"},
                                                {"archive/data/0", floats({0, 1, 2, 3, 4, 5})}}),
                                           "views.pth");
  {
    const FloatTensor a = views->floats("a"), b = views->floats("b");
    EXPECT_EQ(a.data, b.data);
  }
  const FloatTensor again = views->floats("a");
  EXPECT_EQ(std::vector<float>(again.data, again.data + 6), (std::vector<float>{0, 2, 4, 1, 3, 5}));
  // A big-endian file's storage is never its own values: converted, they read right.
  std::string be;
  for (float f : {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f}) {
    unsigned char b4[4];
    std::memcpy(b4, &f, 4);
    for (int k = 3; k >= 0; --k) be.push_back(static_cast<char>(b4[k]));
  }
  const auto big = TensorFile::fromBytes(
      zip({{"archive/data.pkl", pkl}, {"archive/byteorder", "big"}, {"archive/data/0", be}}), "big.pth");
  const FloatTensor bh = big->floats("h");
  EXPECT_EQ(std::vector<float>(bh.data, bh.data + 6), (std::vector<float>{0, 1, 2, 3, 4, 5}));
}

// ---- safetensors ---------------------------------------------------------------------------

TEST(TensorFile, SafetensorsF32IsZeroCopyWhenAligned) {
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"__metadata__":{"k":"v"}})";
  for (int pad : {0, 1}) {
    std::string h = header;
    while ((8 + h.size()) % 4 != static_cast<std::size_t>(pad)) h += ' ';
    std::string bytes(8, '\0');
    bytes[0] = static_cast<char>(h.size());
    bytes += h + floats({1.5f, -2});
    const auto file = TensorFile::fromBytes(bytes, "s");
    EXPECT_EQ(file->metadata().at(0).second, "v");
    const FloatTensor a = file->floats("a"), b = file->floats("a");
    EXPECT_EQ(a.data[0], 1.5f);
    EXPECT_EQ(a.data[1], -2.0f);
    // Zero copy points both reads at the same bytes; a misaligned tensor is copied each time.
    EXPECT_EQ(a.data == b.data, pad == 0) << pad;
  }
}

// release(): a mapped file's whole pages of a tensor go back to the kernel and come back from the
// file when read again; bytes in memory are never touched (MADV_DONTNEED would zero them).
TEST(TensorFile, ReleaseGivesMappedPagesBackAndKeepsTheValues) {
  const int n = 5 * 4096;  // several whole pages inside the tensor
  std::string values;
  for (int i = 0; i < n; ++i) {
    const float v = static_cast<float>(i) * 0.25f - 7;
    values.append(reinterpret_cast<const char*>(&v), 4);
  }
  std::string h = R"({"w":{"dtype":"F32","shape":[)" + std::to_string(n) + R"(],"data_offsets":[0,)" +
                  std::to_string(4 * n) + "]}}";
  while ((8 + h.size()) % 4 != 0) h += ' ';
  std::string bytes(8, '\0');
  bytes[0] = static_cast<char>(h.size() & 0xFF);
  bytes[1] = static_cast<char>(h.size() >> 8);
  bytes += h + values;
  const std::string path = ::testing::TempDir() + "release.safetensors";
  {
    std::ofstream out(path, std::ios::binary);
    out << bytes;
  }
  for (bool mapped : {true, false}) {
    const auto file = mapped ? TensorFile::open(path) : TensorFile::fromBytes(bytes, "memory");
    const FloatTensor before = file->floats("w");
    const std::vector<float> copy(before.data, before.data + n);
    file->release("w");
    file->release("not there");  // nothing
    const FloatTensor after = file->floats("w");
    EXPECT_TRUE(std::equal(copy.begin(), copy.end(), after.data)) << (mapped ? "mapped" : "in memory");
    EXPECT_TRUE(std::equal(copy.begin(), copy.end(), before.data)) << (mapped ? "mapped" : "in memory");
  }
  std::remove(path.c_str());
}

TEST(TensorFile, RefusesIntegersAndTensorsOverTheLimit) {
  const std::string h =
      R"({"i":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},"f":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})";
  std::string bytes(8, '\0');
  bytes[0] = static_cast<char>(h.size());
  bytes += h + std::string(24, '\0');
  TensorFileLimits limits;
  limits.max_tensor_bytes = 8;
  const auto file = TensorFile::fromBytes(bytes, "s", limits);
  EXPECT_EQ(file->tensors().size(), 2u);
  EXPECT_EQ(errorOf([&] { file->floats("i"); }),
            "s: tensor i: dtype I64 is not a floating-point type (F32, F16, BF16 or F64): its values are not read as "
            "float32");
  EXPECT_EQ(errorOf([&] { file->floats("f"); }), "s: tensor f: 4 values are more than the limit of 8 bytes as float32");
}

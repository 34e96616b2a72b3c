// torch.save's zip written (formats/torch_save.h, docs/DESIGN.md §2.6): data.pkl against the bytes
// Debian's torch 1.13 writes for the same OrderedDict (recorded here with the Python that printed
// them), the zip's layout as torch's writer lays it out (entries in torch's order, stored, each
// record's data at a multiple of 64 bytes behind an "FB" padding field), and the file read back by
// our own reader (formats/tensor_file.h); saveTrainModel's .pth (learn/train_model.h) read back and
// its refusals. torch.load of the files saveTrainModel writes is tests/oracle/test_training_oracle.py's.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/errors.h"
#include "formats/tensor_file.h"
#include "formats/torch_save.h"
#include "formats/zip_archive.h"
#include "learn/train_model.h"
#include "learn/train_task.h"
#include "test_support.h"

using namespace attnscope;
using namespace std::string_literals;

namespace {

unsigned le(const std::string& s, std::size_t at, int n) {
  unsigned v = 0;
  for (int k = n - 1; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(s.at(at + static_cast<std::size_t>(k)));
  return v;
}

struct Record {
  std::string name, extra, data;
  std::size_t data_offset;
  unsigned dos_time_and_date;
};

// The local records in file order, walked from the first byte as a reader that trusts the local
// headers would (miniz's does, to find each entry's data).
std::vector<Record> localRecords(const std::string& zip) {
  std::vector<Record> out;
  std::size_t at = 0;
  while (zip.compare(at, 4, "PK\x03\x04") == 0) {
    const unsigned flags = le(zip, at + 6, 2), method = le(zip, at + 8, 2);
    const unsigned size = le(zip, at + 22, 4), n = le(zip, at + 26, 2), m = le(zip, at + 28, 2);
    EXPECT_EQ(method, 0u) << "stored";
    EXPECT_EQ(le(zip, at + 18, 4), size) << "compressed size = size";
    EXPECT_EQ(flags & 8u, 0u) << "no data descriptor";
    Record r{zip.substr(at + 30, n), zip.substr(at + 30 + n, m), "", at + 30 + n + m, le(zip, at + 10, 4)};
    r.data = zip.substr(r.data_offset, size);
    at = r.data_offset + size;
    out.push_back(r);
  }
  EXPECT_EQ(zip.compare(at, 4, "PK\x01\x02"), 0) << "the central directory follows the last record";
  return out;
}

std::string dataPkl(const std::string& zip) {
  const auto z = ZipArchive::fromBytes(std::make_shared<const std::string>(zip), "t.pth");
  const auto at = z.find("archive/data.pkl");
  EXPECT_TRUE(at.has_value());
  return at ? z.read(*at, 1 << 24) : "";
}

std::string hex(const std::string& s) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) (out += digits[c >> 4]) += digits[c & 15];
  return out;
}

}  // namespace

// torch.save(OrderedDict([('a', torch.ones(2)), ('b.c', torch.arange(6.).reshape(2, 3))]), p);
// zipfile.ZipFile(p).read('archive/data.pkl') in Debian's torch 1.13.
TEST(TorchSave, DataPklIsTorchsByteForByte) {
  const std::vector<float> a{1, 1}, bc{0, 1, 2, 3, 4, 5};
  const std::string want =
      "\x80\x02"
      "ccollections\nOrderedDict\nq\x00)Rq\x01(X\x01\x00\x00\x00"
      "aq\x02"
      "ctorch._utils\n_rebuild_tensor_v2\nq\x03((X\x07\x00\x00\x00storageq\x04"
      "ctorch\nFloatStorage\nq\x05X\x01\x00\x00\x00"
      "0q\x06X\x03\x00\x00\x00"
      "cpuq\x07K\x02tq\x08QK\x00K\x02\x85q\tK\x01\x85q\n\x89h\x00)Rq\x0btq\x0cRq\rX\x03\x00\x00\x00"
      "b.cq\x0eh\x03((h\x04h\x05X\x01\x00\x00\x00"
      "1q\x0fh\x07K\x06tq\x10QK\x00K\x02K\x03\x86q\x11K\x03K\x01\x86q\x12\x89h\x00)Rq\x13tq\x14Rq\x15u."s;
  EXPECT_EQ(want.size(), 229u);
  const std::string got = dataPkl(torchSaveBytes({{"a", {2}, a.data()}, {"b.c", {2, 3}, bc.data()}}));
  EXPECT_EQ(hex(got), hex(want));
}

// The root module's _metadata, as state_dict() sets it and attnscope adds the heads to: sd =
// OrderedDict([('a', torch.ones(2))]); sd._metadata = OrderedDict([('', {'version': 1, 'n_head': 2})]);
// torch.save(sd, p) in Debian's torch 1.13 (its data.pkl, 236 bytes). Read back, the file says them.
TEST(TorchSave, RootMetadataIsTorchsAndReadsBack) {
  const std::vector<float> a{1, 1};
  const std::string want =
      "\x80\x02"
      "ccollections\nOrderedDict\nq\x00)Rq\x01X\x01\x00\x00\x00"
      "aq\x02"
      "ctorch._utils\n_rebuild_tensor_v2\nq\x03((X\x07\x00\x00\x00storageq\x04"
      "ctorch\nFloatStorage\nq\x05X\x01\x00\x00\x00"
      "0q\x06X\x03\x00\x00\x00"
      "cpuq\x07K\x02tq\x08QK\x00K\x02\x85q\tK\x01\x85q\n\x89h\x00)Rq\x0btq\x0cRq\rs}q\x0eX\t\x00\x00\x00"
      "_metadataq\x0fh\x00)Rq\x10X\x00\x00\x00\x00q\x11}q\x12(X\x07\x00\x00\x00versionq\x13K\x01X\x06\x00\x00\x00"
      "n_headq\x14K\x02ussb."s;
  EXPECT_EQ(want.size(), 236u);
  const std::string bytes = torchSaveBytes({{"a", {2}, a.data()}}, "archive", {{"version", 1}, {"n_head", 2}});
  EXPECT_EQ(hex(dataPkl(bytes)), hex(want));
  const auto file = TensorFile::fromBytes(bytes, "t.pth");
  EXPECT_EQ(file->metadata(), (std::vector<std::pair<std::string, std::string>>{{"version", "1"}, {"n_head", "2"}}));
  EXPECT_EQ(file->floats("a").data[1], 1.0f);
  // One entry (SETITEM, not MARK … SETITEMS) and an empty dict: sd2 = OrderedDict(); sd2._metadata =
  // OrderedDict([('', {'n_head': 300})]) — torch's data.pkl.
  const std::string one = dataPkl(torchSaveBytes({}, "archive", {{"n_head", 300}}));
  EXPECT_EQ(hex(one), hex("\x80\x02"
                          "ccollections\nOrderedDict\nq\x00)Rq\x01}q\x02X\t\x00\x00\x00_metadataq\x03h\x00)Rq\x04"
                          "X\x00\x00\x00\x00q\x05}q\x06X\x06\x00\x00\x00n_headq\x07M,\x01sssb."s));
  // Without metadata the file says nothing.
  EXPECT_TRUE(TensorFile::fromBytes(torchSaveBytes({{"a", {2}, a.data()}}), "t.pth")->metadata().empty());
  // A key said twice is the last, as Python's dict keeps it; keys no reader uses are not kept; a
  // string value past 32 MiB is refused (a hostile pickle pointing thousands of entries at one
  // large string had each copied: 20 MB of file took 40 GB).
  const auto twice = TensorFile::fromBytes(
      torchSaveBytes({}, "archive", {{"n_head", 2}, {"other", std::string(100, 'x')}, {"n_head", 3}}), "t.pth");
  EXPECT_EQ(twice->metadata(), (std::vector<std::pair<std::string, std::string>>{{"n_head", "3"}}));
  const std::string huge = torchSaveBytes({}, "archive", {{"vocabulary", std::string((32 << 20) + 1, 'x')}});
  EXPECT_NE(test::errorOf([&] { TensorFile::fromBytes(huge, "t.pth"); })
                .find("t.pth: its state_dict's _metadata[''].vocabulary holds 33554433 bytes, more than a model's "
                      "33554432"),
            std::string::npos);
}

// A scalar (size ()), a zero-sized tensor (strides of a size 0 counted as 1), four dimensions
// (MARK … TUPLE) and a size over 65535 (BININT): torch.save(OrderedDict([('s', torch.tensor(2.5)),
// ('z', torch.zeros(2, 0, 3)), ('f', torch.zeros(1, 2, 1, 2)), ('big', torch.zeros(70000))]), p).
TEST(TorchSave, OddShapesAreTorchs) {
  const std::vector<float> s{2.5f}, f(4, 0.0f), big(70000, 0.0f);
  const std::string want =
      "\x80\x02"
      "ccollections\nOrderedDict\nq\x00)Rq\x01(X\x01\x00\x00\x00sq\x02"
      "ctorch._utils\n_rebuild_tensor_v2\nq\x03((X\x07\x00\x00\x00storageq\x04"
      "ctorch\nFloatStorage\nq\x05X\x01\x00\x00\x00"
      "0q\x06X\x03\x00\x00\x00"
      "cpuq\x07K\x01tq\x08QK\x00))\x89h\x00)Rq\ttq\nRq\x0bX\x01\x00\x00\x00zq\x0ch\x03((h\x04h\x05X\x01\x00\x00\x00"
      "1q\rh\x07K\x00tq\x0eQK\x00K\x02K\x00K\x03\x87q\x0fK\x03K\x03K\x01\x87q\x10\x89h\x00)Rq\x11tq\x12Rq\x13X\x01\x00"
      "\x00\x00"
      "fq\x14h\x03((h\x04h\x05X\x01\x00\x00\x00"
      "2q\x15h\x07K\x04tq\x16QK\x00(K\x01K\x02K\x01K\x02tq\x17(K\x04K\x02K\x02K\x01tq\x18\x89h\x00)Rq\x19tq\x1aRq\x1bX"
      "\x03\x00\x00\x00"
      "bigq\x1ch\x03((h\x04h\x05X\x01\x00\x00\x00"
      "3q\x1dh\x07Jp\x11\x01\x00tq\x1eQK\x00Jp\x11\x01\x00\x85q\x1fK\x01\x85q \x89h\x00)Rq!tq\"Rq#u."s;
  EXPECT_EQ(want.size(), 359u);
  const std::string bytes = torchSaveBytes(
      {{"s", {}, s.data()}, {"z", {2, 0, 3}, nullptr}, {"f", {1, 2, 1, 2}, f.data()}, {"big", {70000}, big.data()}});
  EXPECT_EQ(hex(dataPkl(bytes)), hex(want));
  // Read back by our reader: the scalar's value, the empty tensor's shape.
  const auto file = TensorFile::fromBytes(bytes, "t.pth");
  ASSERT_EQ(file->tensors().size(), 4u);
  EXPECT_EQ(file->floats("s").data[0], 2.5f);
  EXPECT_TRUE(file->tensors()[0].shape.empty());
  EXPECT_EQ(file->tensors()[1].shape, (std::vector<std::int64_t>{2, 0, 3}));
  EXPECT_EQ(file->floats("big").elements(), 70000);
}

// An empty state_dict: torch.save(OrderedDict(), p) pickles the dict alone.
TEST(TorchSave, EmptyDictIsTorchs) {
  const std::string bytes = torchSaveBytes({});
  EXPECT_EQ(dataPkl(bytes), "\x80\x02"
                            "ccollections\nOrderedDict\nq\x00)Rq\x01."s);
  const std::vector<Record> records = localRecords(bytes);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].name, "archive/version");
  EXPECT_EQ(records[1].data, "3\n");
}

// 1001 tensors: a batch of 1000 items (MARK … SETITEMS) and one of one (SETITEM), and memo indices
// past 255 (LONG_BINPUT). torch's data.pkl for the same dict — OrderedDict((f't{i}', torch.full((1,),
// float(i))) for i in range(1001)) — is 85228 bytes of CRC-32 ae476bc0.
TEST(TorchSave, BatchesAndLongMemoAreTorchsAndReadBack) {
  std::vector<float> values(1001);
  std::vector<NamedFloats> tensors;
  for (int i = 0; i < 1001; ++i) {
    values[static_cast<std::size_t>(i)] = static_cast<float>(i);
    tensors.push_back({"t" + std::to_string(i), {1}, &values[static_cast<std::size_t>(i)]});
  }
  const std::string bytes = torchSaveBytes(tensors, "model");
  const auto z = ZipArchive::fromBytes(std::make_shared<const std::string>(bytes), "model.pth");
  const std::string pkl = z.read(*z.find("model/data.pkl"), 1 << 24);
  EXPECT_EQ(pkl.size(), 85228u);
  EXPECT_EQ(crc32(0, reinterpret_cast<const Bytef*>(pkl.data()), static_cast<uInt>(pkl.size())), 0xae476bc0u);
  const auto file = TensorFile::fromBytes(bytes, "model.pth");
  ASSERT_EQ(file->tensors().size(), 1001u);
  for (int i : {0, 9, 10, 255, 256, 999, 1000}) {
    EXPECT_EQ(file->tensors()[static_cast<std::size_t>(i)].name, "t" + std::to_string(i));
    EXPECT_EQ(file->floats("t" + std::to_string(i)).data[0], static_cast<float>(i));
  }
}

// The zip as torch's writer lays it out: data.pkl, the storages by key sorted as strings, version;
// each record's data at a multiple of 64 bytes behind its "FB" field of 'Z's (always there, even
// when no padding is needed), all dated alike; the central directory without the field. And our reader
// gives back the names, shapes and values.
TEST(TorchSave, ZipIsLaidOutAsTorchsAndReadsBack) {
  std::vector<std::vector<float>> values;
  std::vector<NamedFloats> tensors;
  for (int i = 0; i < 12; ++i) {
    values.emplace_back(static_cast<std::size_t>(i + 1) * 3);
    for (std::size_t k = 0; k < values.back().size(); ++k) values.back()[k] = static_cast<float>(i) + 0.25f * k;
  }
  for (int i = 0; i < 12; ++i)
    tensors.push_back({"trf_blocks." + std::to_string(i) + ".w", {i + 1, 3}, values[static_cast<std::size_t>(i)].data()});
  const std::string bytes = torchSaveBytes(tensors, "my.model");
  const std::vector<Record> records = localRecords(bytes);
  std::vector<std::string> names;
  for (const Record& r : records) {
    names.push_back(r.name);
    EXPECT_EQ(r.data_offset % 64, 0u) << r.name;
    ASSERT_GE(r.extra.size(), 4u) << r.name;
    EXPECT_EQ(r.extra.substr(0, 2), "FB") << r.name;
    EXPECT_EQ(le(r.extra, 2, 2), r.extra.size() - 4) << r.name;
    EXPECT_EQ(r.extra.substr(4), std::string(r.extra.size() - 4, 'Z')) << r.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"my.model/data.pkl", "my.model/data/0", "my.model/data/1",
                                             "my.model/data/10", "my.model/data/11", "my.model/data/2",
                                             "my.model/data/3", "my.model/data/4", "my.model/data/5",
                                             "my.model/data/6", "my.model/data/7", "my.model/data/8",
                                             "my.model/data/9", "my.model/version"}));
  EXPECT_EQ(records.back().data, "3\n");
  EXPECT_EQ(records[3].data, std::string(reinterpret_cast<const char*>(values[10].data()), 33 * 4));
  // Dated alike: 1980-01-01 00:00 (torch's 0 is no date, which libzip cannot write).
  for (const Record& r : records) EXPECT_EQ(r.dos_time_and_date, 0x00210000u) << r.name;

  const auto file = TensorFile::fromBytes(bytes, "my.model.pth");
  EXPECT_EQ(file->format(), "pth");
  ASSERT_EQ(file->tensors().size(), 12u);
  for (int i = 0; i < 12; ++i) {
    const TensorInfo& t = file->tensors()[static_cast<std::size_t>(i)];
    EXPECT_EQ(t.name, tensors[static_cast<std::size_t>(i)].name);
    EXPECT_EQ(t.dtype, "F32");
    EXPECT_EQ(t.shape, (std::vector<std::int64_t>{i + 1, 3}));
    const FloatTensor f = file->floats(t.name);
    EXPECT_EQ(std::vector<float>(f.data, f.data + f.elements()), values[static_cast<std::size_t>(i)]);
  }
}

TEST(TorchSave, ArchiveNamesAreTorchsAndNamesMustDiffer) {
  EXPECT_EQ(torchArchiveName("/tmp/runs/model.pth"), "model");
  EXPECT_EQ(torchArchiveName("a.b.pt"), "a.b");
  EXPECT_EQ(torchArchiveName("dir.d/model"), "model");
  EXPECT_EQ(torchArchiveName("/tmp/.pth"), "archive");
  const float v = 1;
  EXPECT_THROW(torchSaveBytes({{"w", {1}, &v}, {"w", {1}, &v}}), ComputeError);
}

// saveTrainModel's .pth: the state_dict's names in order with each block's mask, the values the
// model holds; onto a FIFO refused before anything is written (the atomic writer's check, shared
// with the other formats); another extension refused naming the four.
TEST(TorchSave, SaveTrainModelWritesAPthAndRefusesAFifo) {
  char pattern[] = "/tmp/attnscope-torch-save-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  TrainModel m(parseTrainTaskText(R"({"task": "induction", "layers": 2})"));
  for (std::size_t i = 0; i < m.values.size(); ++i) m.values[i] = static_cast<float>(i % 1000) / 1000.0f;

  const std::string path = dir + "/trained.pt";
  saveTrainModel(m, path);
  const auto file = TensorFile::open(path);
  EXPECT_EQ(file->format(), "pth");
  // torch's GPTModel(cfg).state_dict().keys() of this task (attention only), as torch prints them:
  // a block's mask buffer before its children's parameters.
  const std::vector<std::string> want = {
      "tok_emb.weight", "pos_emb.weight",
      "trf_blocks.0.att.mask", "trf_blocks.0.att.W_query.weight", "trf_blocks.0.att.W_key.weight",
      "trf_blocks.0.att.W_value.weight", "trf_blocks.0.att.out_proj.weight", "trf_blocks.0.att.out_proj.bias",
      "trf_blocks.0.norm1.scale", "trf_blocks.0.norm1.shift",
      "trf_blocks.1.att.mask", "trf_blocks.1.att.W_query.weight", "trf_blocks.1.att.W_key.weight",
      "trf_blocks.1.att.W_value.weight", "trf_blocks.1.att.out_proj.weight", "trf_blocks.1.att.out_proj.bias",
      "trf_blocks.1.norm1.scale", "trf_blocks.1.norm1.shift",
      "final_norm.scale", "final_norm.shift", "out_head.weight"};
  std::vector<std::string> names;
  for (const TensorInfo& t : file->tensors()) names.push_back(t.name);
  EXPECT_EQ(names, want);
  const ParamTensor& q = m.tensors[static_cast<std::size_t>(m.blocks[1].wq)];
  const FloatTensor w = file->floats(q.name);
  EXPECT_EQ(std::vector<float>(w.data, w.data + w.elements()),
            std::vector<float>(m.values.begin() + static_cast<std::ptrdiff_t>(q.offset),
                               m.values.begin() + static_cast<std::ptrdiff_t>(q.offset + q.size)));
  const FloatTensor mask = file->floats("trf_blocks.1.att.mask");
  ASSERT_EQ(mask.shape, (std::vector<std::int64_t>{m.context, m.context}));
  EXPECT_EQ(mask.data[1], 1.0f);            // (0, 1): a later key, masked
  EXPECT_EQ(mask.data[m.context], 0.0f);    // (1, 0)
  // torch names the archive after the file: "trained"
  const auto zip = ZipArchive::openFile(path, path);
  EXPECT_TRUE(zip.find("trained/data.pkl").has_value());

  const std::string fifo = dir + "/pipe.pth";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string refused = test::errorOf([&] { saveTrainModel(m, fifo); });
  EXPECT_NE(refused.find(fifo), std::string::npos) << refused;
  EXPECT_NE(refused.find("a pipe (FIFO)"), std::string::npos) << refused;
  EXPECT_NE(test::errorOf([&] { saveTrainModel(m, dir + "/model.bin"); }).find(".npz, .safetensors, .pth or .pt"),
            std::string::npos);
  // An extension in capitals is the same kind: MODEL.PTH is torch.save's file.
  saveTrainModel(m, dir + "/MODEL.PTH");
  EXPECT_EQ(TensorFile::open(dir + "/MODEL.PTH")->format(), "pth");
  // A folder that is not there is said before a run, by the check the CLI and the app make first.
  const std::string nowhere = dir + "/nosuch/model.pth";
  const std::string missing = test::errorOf([&] { checkTrainModelPath(nowhere); });
  EXPECT_EQ(missing, nowhere + ": cannot write (No such file or directory); nothing was written");
  std::filesystem::remove_all(dir);
}

// The one zip reader (docs/DESIGN.md §2.6): libzip, for NumPy's .npz and torch.save's .pth. An
// archive opens from a file or from bytes in memory; its entries are listed from the central
// directory, and an entry is read with a cap on its size that is checked against the size the
// archive declares before anything is allocated, and again while inflating, so a zip bomb (an entry
// that inflates to far more than it says) allocates nothing beyond the cap.
//
// Every refusal is one InputError "SOURCE: why". `kind` words the damaged-archive messages: "zip
// (.npz)" gives "SOURCE: a damaged zip (.npz) file: …".
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attnscope {

class ZipArchive {
 public:
  struct Entry {
    std::string name;              // as stored ("inputs.npy", "archive/data/0")
    std::uint64_t size = 0;        // uncompressed, as the central directory declares it
    std::uint64_t compressed = 0;  // bytes in the archive
    int method = 0;                // 0 stored, 8 deflated; others are refused when read
    bool encrypted = false;
  };

  // Throws InputError "SOURCE: a damaged KIND file: …" when libzip cannot read the central directory.
  static ZipArchive openFile(const std::string& path, const std::string& source, const std::string& kind = "zip");
  static ZipArchive fromBytes(std::shared_ptr<const std::string> bytes, const std::string& source,
                              const std::string& kind = "zip");
  ZipArchive(ZipArchive&&) noexcept;
  ZipArchive& operator=(ZipArchive&&) noexcept;
  ~ZipArchive();

  const std::vector<Entry>& entries() const;
  std::optional<std::size_t> find(const std::string& name) const;

  // The whole entry, uncompressed and CRC-checked. Refuses (naming the entry) other methods than
  // stored and deflated, encryption, a declared size over `max_bytes` (before reading), and data
  // that inflates to more or fewer bytes than declared. Safe to call from several threads.
  std::string read(std::size_t index, std::uint64_t max_bytes) const;
  // The first min(n, size) bytes of an entry (a .npy header), nothing more inflated.
  std::string readPrefix(std::size_t index, std::size_t n) const;

 private:
  struct Impl;
  explicit ZipArchive(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A text fit for one line (a message, a window title): control characters as '?', as ls shows them.
std::string printableText(std::string text);
// A name from a file, fit for a one-line message: printableText, at most 200 bytes.
std::string printableName(const std::string& name);

// How zipBytes lays its entries out. The default is what NumPy's np.savez writes. torch.save's
// writer (caffe2's PyTorchStreamWriter, docs/DESIGN.md §2.6) starts every entry's data at a
// multiple of 64 bytes, padding each local header with an extra field "FB" of 'Z's (always there,
// 0 bytes of them when the data falls aligned), and dates its entries 0 — no date, which libzip
// cannot write (it keeps a time_t): the earliest DOS date, 1980-01-01 00:00, stands for it.
struct ZipLayout {
  std::size_t align = 0;     // > 0: each entry's data at a multiple of it (≤ 65 535), padded as torch's
  bool fixed_dates = false;  // every entry dated 1980-01-01 00:00, so equal entries give equal bytes
};

// A zip of `entries` (name, bytes), stored uncompressed, as its bytes: what NumPy's np.savez
// writes, so np.load reads an .npz of it; with a ZipLayout as torch.save's, what torch.load reads.
// libzip writes it, in memory.
std::string zipBytes(const std::vector<std::pair<std::string, std::string>>& entries, const ZipLayout& layout = {});

}  // namespace attnscope

// The zip reader on libzip (formats/zip_archive.h, docs/DESIGN.md §2.6). libzip reads the central
// directory (zip64 included); the central directory is what counts (as for NumPy and torch, which
// read it the same way: ZIP_CHECKCONS would refuse archives whose local headers merely disagree).
// This file adds the size caps and words libzip's errors as one sentence each.
#include "formats/zip_archive.h"

#include <sys/stat.h>
#include <zip.h>

#include <cerrno>
#include <mutex>
#include <unordered_map>

#include "engine/errors.h"
#include "formats/file_reading.h"

namespace attnscope {

namespace {


// libzip's error codes in the words of our messages.
std::string why(int code) {
  switch (code) {
    case ZIP_ER_NOZIP: return "no end of central directory record";
    case ZIP_ER_INCONS: return "its central directory and its entries disagree";
    case ZIP_ER_CRC: return "fails its CRC check";
    case ZIP_ER_EOF:
    case ZIP_ER_READ:
    case ZIP_ER_SEEK: return "runs past the end of the file";
    case ZIP_ER_ZLIB:
    case ZIP_ER_COMPRESSED_DATA: return "its deflated data is damaged";
    case ZIP_ER_MEMORY: return "out of memory";
    case ZIP_ER_OPEN: return "cannot open the file";
    default: {
      zip_error_t e;
      zip_error_init_with_code(&e, code);
      std::string text = zip_error_strerror(&e);
      zip_error_fini(&e);
      return text;
    }
  }
}

}  // namespace

std::string printableText(std::string text) {
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return text;
}

std::string printableName(const std::string& name) { return printableText(name.substr(0, 200)); }

struct ZipArchive::Impl {
  std::string source, kind;
  std::shared_ptr<const std::string> bytes;  // kept alive for a zip in memory
  std::uint64_t archive_size = 0;
  zip_t* zip = nullptr;
  std::vector<Entry> entries;
  std::unordered_map<std::string, std::size_t> by_name;  // the first entry of each name (a .pth's
                                                         // storages are found by name, one each)
  std::mutex mutex;  // a zip_t reads one entry at a time

  ~Impl() {
    if (zip) zip_discard(zip);
  }
  [[noreturn]] void damaged(const std::string& what) const { fail(source, "a damaged " + kind + " file: " + what); }

  void list() {
    const zip_int64_t n = zip_get_num_entries(zip, 0);
    if (n < 0) damaged("its central directory cannot be read");
    entries.reserve(static_cast<std::size_t>(n));
    for (zip_int64_t i = 0; i < n; ++i) {
      zip_stat_t st;
      zip_stat_init(&st);
      if (zip_stat_index(zip, static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW, &st) != 0)
        damaged("entry " + std::to_string(i) + " cannot be read");
      Entry e;
      e.name = (st.valid & ZIP_STAT_NAME) && st.name ? st.name : "";
      e.size = (st.valid & ZIP_STAT_SIZE) ? st.size : 0;
      e.compressed = (st.valid & ZIP_STAT_COMP_SIZE) ? st.comp_size : 0;
      e.method = (st.valid & ZIP_STAT_COMP_METHOD) ? static_cast<int>(st.comp_method) : 0;
      e.encrypted = (st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE;
      by_name.emplace(e.name, entries.size());
      entries.push_back(std::move(e));
    }
  }

  // Opens an entry for reading after the checks that need no data.
  zip_file_t* open(std::size_t index) const {
    const Entry& e = entries.at(index);
    const std::string name = printableName(e.name);
    // libzip reads an entry through a window of its compressed size: one past the file's end is
    // damage even when the deflate stream happens to end sooner.
    if (e.compressed > archive_size) damaged("entry '" + name + "' runs past the end of the file");
    if (e.encrypted) fail(source, "entry '" + name + "' is encrypted");
    if (e.method != ZIP_CM_STORE && e.method != ZIP_CM_DEFLATE)
      fail(source, "entry '" + name + "' uses compression method " + std::to_string(e.method) +
                       " (only stored and deflated entries, as np.savez and np.savez_compressed write)");
    zip_file_t* f = zip_fopen_index(zip, index, 0);
    if (!f) damaged("entry '" + name + "' " + why(zip_error_code_zip(zip_get_error(zip))));
    return f;
  }

  // Reads up to `n` bytes into `out`; returns how many (fewer only at the entry's end).
  std::size_t fill(zip_file_t* f, char* out, std::size_t n, const std::string& name) const {
    std::size_t got = 0;
    while (got < n) {
      const zip_int64_t r = zip_fread(f, out + got, n - got);
      if (r < 0) {
        const std::string w = why(zip_error_code_zip(zip_file_get_error(f)));
        zip_fclose(f);
        damaged("entry '" + name + "' " + w);
      }
      if (r == 0) break;
      got += static_cast<std::size_t>(r);
    }
    return got;
  }
};

ZipArchive::ZipArchive(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ZipArchive::ZipArchive(ZipArchive&&) noexcept = default;
ZipArchive& ZipArchive::operator=(ZipArchive&&) noexcept = default;
ZipArchive::~ZipArchive() = default;

ZipArchive ZipArchive::openFile(const std::string& path, const std::string& source, const std::string& kind) {
  auto impl = std::make_unique<Impl>();
  impl->source = source;
  impl->kind = kind;
  int error = 0;
  impl->zip = zip_open(path.c_str(), ZIP_RDONLY, &error);
  struct stat st;
  impl->archive_size = ::stat(path.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
  if (!impl->zip) {
    if (error == ZIP_ER_OPEN || error == ZIP_ER_NOENT) fail(source, cannotOpen(error == ZIP_ER_NOENT ? ENOENT : errno));
    impl->damaged(why(error));
  }
  impl->list();
  return ZipArchive(std::move(impl));
}

ZipArchive ZipArchive::fromBytes(std::shared_ptr<const std::string> bytes, const std::string& source,
                                 const std::string& kind) {
  auto impl = std::make_unique<Impl>();
  impl->source = source;
  impl->kind = kind;
  impl->bytes = std::move(bytes);
  impl->archive_size = impl->bytes->size();
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* src = zip_source_buffer_create(impl->bytes->data(), impl->bytes->size(), 0, &error);
  if (!src) {
    zip_error_fini(&error);
    fail(source, "out of memory");
  }
  impl->zip = zip_open_from_source(src, ZIP_RDONLY, &error);
  if (!impl->zip) {
    zip_source_free(src);
    const int code = zip_error_code_zip(&error);
    zip_error_fini(&error);
    impl->damaged(why(code));
  }
  zip_error_fini(&error);
  impl->list();
  return ZipArchive(std::move(impl));
}

const std::vector<ZipArchive::Entry>& ZipArchive::entries() const { return impl_->entries; }

std::optional<std::size_t> ZipArchive::find(const std::string& name) const {
  const auto it = impl_->by_name.find(name);
  if (it == impl_->by_name.end()) return std::nullopt;
  return it->second;
}

std::string ZipArchive::read(std::size_t index, std::uint64_t max_bytes) const {
  const Entry& e = impl_->entries.at(index);
  const std::string name = printableName(e.name);
  // The declared size first: nothing is allocated for an entry that says it is too large.
  if (e.size > max_bytes)
    fail(impl_->source, "entry '" + name + "' holds " + std::to_string(e.size) + " bytes, more than the limit of " +
                            std::to_string(max_bytes) + " bytes");
  if (e.method == ZIP_CM_STORE && e.compressed != e.size)
    impl_->damaged("entry '" + name + "' is stored with two sizes");
  // Deflate expands at most 1032-fold (zlib's bound): a larger declared size is a lie, refused
  // before its buffer is allocated (16 bytes that said 4 GB had allocated 4 GB, then failed).
  if (e.method == ZIP_CM_DEFLATE && e.size > e.compressed * 1032 + 1024)
    impl_->damaged("entry '" + name + "' declares " + std::to_string(e.size) + " bytes from " +
                   std::to_string(e.compressed) + " compressed, more than deflate can hold");
  std::lock_guard<std::mutex> lock(impl_->mutex);
  zip_file_t* f = impl_->open(index);
  std::string out(static_cast<std::size_t>(e.size), '\0');
  const std::size_t got = impl_->fill(f, out.data(), out.size(), name);
  // Then while inflating: one byte more than declared is a lie (a bomb, or damage), and the read
  // stops there. Reading to the end also makes libzip check the CRC.
  char extra;
  const std::size_t more = got == out.size() ? impl_->fill(f, &extra, 1, name) : 0;
  zip_fclose(f);
  if (more)
    impl_->damaged("entry '" + name + "' inflates to more than its declared " + std::to_string(e.size) + " bytes");
  if (got != out.size())
    impl_->damaged("entry '" + name + "' does not inflate to its " + std::to_string(e.size) + " bytes");
  return out;
}

std::string ZipArchive::readPrefix(std::size_t index, std::size_t n) const {
  const Entry& e = impl_->entries.at(index);
  const std::string name = printableName(e.name);
  if (e.size < n) n = static_cast<std::size_t>(e.size);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  zip_file_t* f = impl_->open(index);
  std::string out(n, '\0');
  out.resize(impl_->fill(f, out.data(), n, name));
  zip_fclose(f);
  return out;
}

std::string zipBytes(const std::vector<std::pair<std::string, std::string>>& entries, const ZipLayout& layout) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* out = zip_source_buffer_create(nullptr, 0, 0, &error);
  zip_error_fini(&error);
  if (!out) throw std::bad_alloc();
  zip_source_keep(out);  // zip_close releases the archive's reference; ours reads the bytes after
  zip_error_init(&error);
  zip_t* archive = zip_open_from_source(out, ZIP_TRUNCATE, &error);
  zip_error_fini(&error);
  auto failed = [&](const char* what) {
    if (archive) zip_discard(archive);
    zip_source_free(out);
    throw ComputeError(std::string("writing a zip: ") + what);
  };
  if (!archive) failed("libzip could not start one");
  if (layout.align > 0xffff) failed("an alignment over 65535 bytes");
  // Where each entry's local header starts. libzip writes the entries in order, each a local
  // header (30 bytes, the name, its extra fields: ours, and zip64's 20 bytes of sizes when the
  // entry reaches 4 GiB) then the stored data, with no data descriptor (its output is seekable:
  // the header is written again with the CRC, at the same size).
  std::uint64_t cursor = 0;
  const std::string pad_bytes(layout.align, 'Z');
  for (const auto& [name, bytes] : entries) {
    zip_source_t* entry = zip_source_buffer(archive, bytes.data(), bytes.size(), 0);  // read at zip_close
    if (!entry) failed("out of memory");
    const zip_int64_t index = zip_file_add(archive, name.c_str(), entry, ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE);
    if (index < 0) {
      zip_source_free(entry);
      failed(zip_strerror(archive));
    }
    const auto at = static_cast<zip_uint64_t>(index);
    zip_set_file_compression(archive, at, ZIP_CM_STORE, 0);
    // DOS time 0, date 0x21 (day 1 of month 1 of 1980)
    if (layout.fixed_dates && zip_file_set_dostime(archive, at, 0, 0x21, 0) != 0) failed(zip_strerror(archive));
    std::uint64_t header = 30 + name.size() + (bytes.size() >= 0xffffffffu ? 20 : 0);
    if (layout.align) {
      // torch's getPadding (caffe2/serialize/inline_container.cc): "FB", the padding's length, 'Z's.
      const std::uint64_t start = cursor + header + 4;
      const std::size_t pad = static_cast<std::size_t>((layout.align - start % layout.align) % layout.align);
      const auto* data = reinterpret_cast<const zip_uint8_t*>(pad_bytes.data());
      if (zip_file_extra_field_set(archive, at, 0x4246 /* "FB" */, ZIP_EXTRA_FIELD_NEW, pad ? data : nullptr,
                                   static_cast<zip_uint16_t>(pad), ZIP_FL_LOCAL) != 0)
        failed(zip_strerror(archive));
      header += 4 + pad;
    }
    cursor += header + bytes.size();
  }
  if (zip_close(archive) != 0) failed(zip_strerror(archive));
  archive = nullptr;
  std::string bytes;
  if (zip_source_open(out) != 0) failed("its bytes cannot be read back");
  char buffer[1 << 16];
  for (zip_int64_t n; (n = zip_source_read(out, buffer, sizeof buffer)) > 0;)
    bytes.append(buffer, static_cast<std::size_t>(n));
  zip_source_close(out);
  zip_source_free(out);
  return bytes;
}

}  // namespace attnscope

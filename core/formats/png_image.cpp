#include "formats/png_image.h"

#include <png.h>
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>

#include "engine/errors.h"
#include "formats/atomic_file.h"
#include "formats/workspace_file.h"

namespace attnscope {

namespace {

// libpng reports errors by longjmp to the setjmp of the function that called it. No C++ object
// with a destructor may live in a frame that longjmp crosses, so each libpng session below is a
// function whose locals are plain pointers and numbers; everything it fills belongs to its caller.
// libpng's own printing is silenced: a failure becomes one message of ours.
void pngError(png_structp png, png_const_charp) { png_longjmp(png, 1); }
void pngWarning(png_structp, png_const_charp) {}

struct EncodeJob {
  std::string* out;  // the PNG's bytes
  int width, height;
  const std::uint8_t* rgb;
  png_text* text;  // null: no text chunk
};

void appendBytes(png_structp png, png_bytep data, png_size_t length) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<const char*>(data), length);
}
void noFlush(png_structp) {}

// 0 on success, 1 when libpng failed (out of memory).
int encodeSession(const EncodeJob* job) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, pngError, pngWarning);
  if (!png) return 1;
  png_infop info = png_create_info_struct(png);
  if (!info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return 1;
  }
  png_set_write_fn(png, job->out, appendBytes, noFlush);
  png_set_IHDR(png, info, static_cast<png_uint_32>(job->width), static_cast<png_uint_32>(job->height), 8,
               PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  // Screenshots are flat colours, text and colour maps: unfiltered rows at zlib level 3 encode 4–8×
  // as fast as libpng's default (every filter tried per row, level 6) and 0–15 % smaller, at most
  // 15 % larger (docs/DESIGN.md §4 "How long they take").
  png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
  png_set_compression_level(png, 3);
  if (job->text) png_set_text(png, info, job->text, 1);
  png_write_info(png, info);
  for (int y = 0; y < job->height; ++y)
    png_write_row(png, const_cast<png_bytep>(job->rgb + static_cast<std::size_t>(y) * job->width * 3));
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return 0;
}

struct DecodeJob {
  FILE* file;
  RgbImage* image;
  std::vector<png_bytep>* rows;
  int channels;  // out: channels after the transforms
};

// 0 on success, 1 not a readable PNG, 2 not RGB after expanding (e.g. grey or with alpha).
int decodeSession(DecodeJob* job) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, nullptr, pngError, pngWarning);
  if (!png) return 1;
  png_infop info = png_create_info_struct(png);
  if (!info || setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return 1;
  }
  png_init_io(png, job->file);
  png_read_info(png, info);
  png_set_strip_16(png);
  png_set_packing(png);
  png_set_expand(png);
  png_set_strip_alpha(png);
  png_read_update_info(png, info);
  job->channels = png_get_channels(png, info);
  if (job->channels != 3) {
    png_destroy_read_struct(&png, &info, nullptr);
    return 2;
  }
  job->image->width = static_cast<int>(png_get_image_width(png, info));
  job->image->height = static_cast<int>(png_get_image_height(png, info));
  job->image->rgb.resize(static_cast<std::size_t>(job->image->width) * job->image->height * 3);
  job->rows->resize(static_cast<std::size_t>(job->image->height));
  for (int y = 0; y < job->image->height; ++y)
    (*job->rows)[y] = job->image->rgb.data() + static_cast<std::size_t>(y) * job->image->width * 3;
  png_read_image(png, job->rows->data());
  png_destroy_read_struct(&png, &info, nullptr);
  return 0;
}

bool isRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::uint32_t bigEndian(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) << 24 | static_cast<std::uint32_t>(p[1]) << 16 |
         static_cast<std::uint32_t>(p[2]) << 8 | p[3];
}

// zlib's inflate of `in` into `out` (null: only counted); the bytes it makes, or nullopt when the
// stream is damaged or makes more than `limit`.
std::optional<std::size_t> inflateInto(const std::string& in, std::size_t limit, char* out) {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return std::nullopt;
  char buffer[1 << 16];
  std::size_t made = 0;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    const std::size_t n = sizeof buffer - z.avail_out;
    if (made + n > limit) {
      rc = Z_MEM_ERROR;
      break;
    }
    if (out != nullptr) std::memcpy(out + made, buffer, n);
    made += n;
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) break;  // truncated stream
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return std::nullopt;
  return made;
}

// zlib's inflate of `in`, at most `limit` bytes out; nullopt if damaged or larger. Counted first,
// then inflated into a string of exactly that size: grown as it came, a string's doubling (and
// reserve's rounding up to it) held up to twice the limit — 1 GiB for a 512-MiB one.
std::optional<std::string> inflateText(const std::string& in, std::size_t limit) {
  const std::optional<std::size_t> size = inflateInto(in, limit, nullptr);
  if (!size) return std::nullopt;
  std::string out(*size, '\0');
  if (inflateInto(in, *size, out.data()) != size) return std::nullopt;
  return out;
}

}  // namespace

std::string writePng(const std::string& path, int width, int height, const std::vector<std::uint8_t>& rgb,
                     const std::string& key, const std::string& text) {
  // Encoded in memory, then written as every other file is (writeFileAtomically): temporary name,
  // fsync, permissions kept, symlinks followed.
  std::string bytes;
  std::string k = key, t = text;  // libpng takes non-const char*
  png_text chunk{};
  chunk.compression = PNG_TEXT_COMPRESSION_zTXt;
  chunk.key = k.data();
  chunk.text = t.data();
  chunk.text_length = t.size();
  const EncodeJob job{&bytes, width, height, rgb.data(), text.empty() ? nullptr : &chunk};
  if (encodeSession(&job) != 0) return "cannot write " + path + ": PNG encoding failed (out of memory?)";
  try {
    writeFileAtomically(path, bytes);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

bool isPng(const std::string& path) {
  if (!isRegularFile(path)) return false;  // a FIFO would block here
  std::ifstream in(path, std::ios::binary);
  unsigned char sig[8] = {};
  in.read(reinterpret_cast<char*>(sig), 8);
  return in.gcount() == 8 && png_sig_cmp(sig, 0, 8) == 0;
}

// Walks the chunks (length, type, data, CRC) without decoding a pixel: a 30000 × 30000 image
// costs what its text chunks cost. tEXt is plain, zTXt deflated, iTXt either.
std::optional<std::string> readPngText(const std::string& path, const std::string& key, std::size_t max_bytes) {
  if (!isRegularFile(path)) throw InputError(path + ": not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open the file");
  unsigned char sig[8];
  if (!in.read(reinterpret_cast<char*>(sig), 8) || png_sig_cmp(sig, 0, 8) != 0)
    throw InputError(path + ": not a readable PNG");
  for (;;) {
    unsigned char head[8];
    if (!in.read(reinterpret_cast<char*>(head), 8)) throw InputError(path + ": not a readable PNG (truncated)");
    const std::uint32_t length = bigEndian(head);
    const std::string type(reinterpret_cast<char*>(head + 4), 4);
    if (length > 0x7fffffffu) throw InputError(path + ": not a readable PNG (bad chunk length)");
    if (type == "IEND") return std::nullopt;
    const bool text = type == "tEXt" || type == "zTXt" || type == "iTXt";
    if (!text) {  // skip data and CRC
      in.seekg(static_cast<std::streamoff>(length) + 4, std::ios::cur);
      if (!in) throw InputError(path + ": not a readable PNG (truncated)");
      continue;
    }
    if (length > max_bytes)
      throw InputError(path + ": a text chunk of " + std::to_string(length) + " bytes exceeds the limit of " +
                       std::to_string(max_bytes) + " bytes");
    std::string data(length, '\0');
    unsigned char crc[4];
    if (!in.read(data.data(), length) || !in.read(reinterpret_cast<char*>(crc), 4))
      throw InputError(path + ": not a readable PNG (truncated)");
    uLong sum = crc32(0L, head + 4, 4);  // the CRC covers the type and the data
    sum = crc32(sum, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size()));
    if (sum != bigEndian(crc)) throw InputError(path + ": a damaged " + type + " chunk (CRC mismatch)");
    const std::size_t nul = data.find('\0');
    if (nul == std::string::npos || data.compare(0, nul, key) != 0 || nul != key.size()) continue;
    std::string rest = data.substr(nul + 1);
    std::optional<std::string> value;
    if (type == "tEXt") {
      value = rest;
    } else if (type == "zTXt") {  // compression method byte, then the deflated text
      if (!rest.empty()) value = inflateText(rest.substr(1), max_bytes);
    } else {  // iTXt: flag, method, language\0, translated keyword\0, text
      if (rest.size() >= 2) {
        const bool compressed = rest[0] != 0;
        const std::size_t lang = rest.find('\0', 2);
        const std::size_t translated = lang == std::string::npos ? lang : rest.find('\0', lang + 1);
        if (translated != std::string::npos) {
          std::string body = rest.substr(translated + 1);
          value = compressed ? inflateText(body, max_bytes) : std::optional<std::string>(body);
        }
      }
    }
    if (!value)
      throw InputError(path + ": its " + key + " text chunk is damaged or larger than " +
                       (max_bytes % (1 << 20) == 0 ? std::to_string(max_bytes >> 20) + " MiB"
                                                   : std::to_string(max_bytes) + " bytes"));
    return value;
  }
}

RgbImage readPngRgb(const std::string& path) {
  if (!isRegularFile(path)) throw InputError(path + ": not a regular file");
  FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) throw InputError(path + ": cannot open the file");
  RgbImage image;
  std::vector<png_bytep> rows;
  DecodeJob job{file, &image, &rows, 0};
  const int rc = decodeSession(&job);
  std::fclose(file);
  if (rc == 1) throw InputError(path + ": not a readable PNG");
  if (rc == 2) throw InputError(path + ": expected an RGB PNG");
  return image;
}

}  // namespace attnscope

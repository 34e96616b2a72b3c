#include "formats/png_image.h"

#include <png.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "engine/errors.h"

namespace attnscope {

namespace {

// A FILE* that closes itself.
struct File {
  FILE* f;
  explicit File(FILE* file) : f(file) {}
  ~File() {
    if (f) std::fclose(f);
  }
};

std::string encode(const std::string& path, int w, int h, const std::vector<std::uint8_t>& rgb,
                   const std::string& key, const std::string& text) {
  FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) return "cannot write " + path + ": " + std::strerror(errno);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    std::fclose(file);
    return "cannot write " + path + ": PNG encoding failed (disk full?)";
  }
  png_init_io(png, file);
  png_set_IHDR(png, info, static_cast<png_uint_32>(w), static_cast<png_uint_32>(h), 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  std::string k = key, t = text;
  png_text chunk{};
  chunk.compression = PNG_TEXT_COMPRESSION_zTXt;
  chunk.key = k.data();
  chunk.text = t.data();
  chunk.text_length = t.size();
  if (!text.empty()) png_set_text(png, info, &chunk, 1);
  png_write_info(png, info);
  for (int y = 0; y < h; ++y)
    png_write_row(png, const_cast<png_bytep>(rgb.data() + static_cast<std::size_t>(y) * w * 3));
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  if (std::fclose(file) != 0) return "cannot write " + path + ": " + std::strerror(errno);
  return "";
}

// Reads the header and (optionally) the pixels; the caller owns nothing afterwards.
template <typename Visit>
void decode(const std::string& path, bool pixels, Visit visit) {
  File file(std::fopen(path.c_str(), "rb"));
  if (!file.f) throw InputError(path + ": cannot open the file");
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info || setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    throw InputError(path + ": not a readable PNG");
  }
  png_init_io(png, file.f);
  if (pixels) {
    png_read_png(png, info, PNG_TRANSFORM_STRIP_16 | PNG_TRANSFORM_PACKING | PNG_TRANSFORM_EXPAND | PNG_TRANSFORM_STRIP_ALPHA,
                 nullptr);
  } else {
    png_read_info(png, info);
  }
  visit(png, info);
  png_destroy_read_struct(&png, &info, nullptr);
}

}  // namespace

std::string writePng(const std::string& path, int width, int height, const std::vector<std::uint8_t>& rgb,
                     const std::string& key, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::string error = encode(tmp, width, height, rgb, key, text);
  if (error.empty() && std::rename(tmp.c_str(), path.c_str()) != 0)
    error = "cannot write " + path + ": " + std::strerror(errno);
  if (!error.empty()) std::remove(tmp.c_str());
  return error;
}

bool isPng(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char sig[8] = {};
  in.read(reinterpret_cast<char*>(sig), 8);
  return in.gcount() == 8 && png_sig_cmp(sig, 0, 8) == 0;
}

std::optional<std::string> readPngText(const std::string& path, const std::string& key) {
  std::optional<std::string> found;
  // Text chunks may follow the pixels, so read the whole file.
  decode(path, true, [&](png_structp png, png_infop info) {
    png_textp texts = nullptr;
    int count = 0;
    png_get_text(png, info, &texts, &count);
    for (int i = 0; i < count; ++i)
      if (key == texts[i].key) found = std::string(texts[i].text, texts[i].itxt_length ? texts[i].itxt_length : texts[i].text_length);
  });
  return found;
}

RgbImage readPngRgb(const std::string& path) {
  RgbImage image;
  decode(path, true, [&](png_structp png, png_infop info) {
    image.width = static_cast<int>(png_get_image_width(png, info));
    image.height = static_cast<int>(png_get_image_height(png, info));
    if (png_get_channels(png, info) != 3) throw InputError(path + ": expected an RGB PNG");
    png_bytepp rows = png_get_rows(png, info);
    image.rgb.resize(static_cast<std::size_t>(image.width) * image.height * 3);
    for (int y = 0; y < image.height; ++y)
      std::memcpy(&image.rgb[static_cast<std::size_t>(y) * image.width * 3], rows[y], static_cast<std::size_t>(image.width) * 3);
  });
  return image;
}

}  // namespace attnscope

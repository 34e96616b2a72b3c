// A zip written byte by byte as Python's zipfile writes it (stored or deflated with zlib), for
// the tests of the readers of .npz and .pth files: the archive is the test's, not the reader's.
#pragma once
#include <zlib.h>

#include <string>
#include <vector>

namespace attnscope::test {

inline void put16(std::string& s, unsigned v) {
  s += static_cast<char>(v & 0xFF);
  s += static_cast<char>((v >> 8) & 0xFF);
}
inline void put32(std::string& s, unsigned long v) {
  put16(s, static_cast<unsigned>(v & 0xFFFF));
  put16(s, static_cast<unsigned>((v >> 16) & 0xFFFF));
}

struct ZipItem {
  std::string name, data;
  bool deflated = false;
  long declared = -1;  // the uncompressed size the headers claim (-1: the true one)
};

// A zip as Python's zipfile writes it: local header + data per entry, central directory, end record.
inline std::string zip(const std::vector<ZipItem>& items) {
  std::string out, central;
  for (const ZipItem& it : items) {
    std::string stored = it.data;
    if (it.deflated) {
      z_stream z{};
      deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
      stored.assign(deflateBound(&z, static_cast<uLong>(it.data.size())), '\0');
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(it.data.data()));
      z.avail_in = static_cast<uInt>(it.data.size());
      z.next_out = reinterpret_cast<Bytef*>(stored.data());
      z.avail_out = static_cast<uInt>(stored.size());
      deflate(&z, Z_FINISH);
      stored.resize(z.total_out);
      deflateEnd(&z);
    }
    const unsigned long crc = crc32(0, reinterpret_cast<const Bytef*>(it.data.data()),
                                    static_cast<uInt>(it.data.size()));
    const unsigned long size = it.declared >= 0 ? static_cast<unsigned long>(it.declared) : it.data.size();
    const unsigned long offset = out.size();
    std::string local = "PK\x03\x04";
    put16(local, 20);
    put16(local, 0);
    put16(local, it.deflated ? 8 : 0);
    put32(local, 0);
    put32(local, crc);
    put32(local, stored.size());
    put32(local, size);
    put16(local, static_cast<unsigned>(it.name.size()));
    put16(local, 0);
    out += local + it.name + stored;
    std::string c = "PK\x01\x02";
    put16(c, 20);
    put16(c, 20);
    put16(c, 0);
    put16(c, it.deflated ? 8 : 0);
    put32(c, 0);
    put32(c, crc);
    put32(c, stored.size());
    put32(c, size);
    put16(c, static_cast<unsigned>(it.name.size()));
    for (int k = 0; k < 4; ++k) put16(c, 0);
    put32(c, 0);
    put32(c, offset);
    central += c + it.name;
  }
  const unsigned long cd_offset = out.size();
  out += central;
  std::string end = "PK\x05\x06";
  put16(end, 0);
  put16(end, 0);
  put16(end, static_cast<unsigned>(items.size()));
  put16(end, static_cast<unsigned>(items.size()));
  put32(end, central.size());
  put32(end, cd_offset);
  put16(end, 0);
  return out + end;
}

}  // namespace attnscope::test

// read_text_file: a file's text, gunzipped when it is gzip-compressed (through zlib where the build found it).
#if DOP_HAVE_ZLIB
#include <zlib.h>
#endif

#include <fstream>
#include <iterator>

#include "dop/dataset.hpp"

namespace dop {

std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw DatasetError(path + ": cannot be read");
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (all.size() < 2 || static_cast<unsigned char>(all[0]) != 0x1f || static_cast<unsigned char>(all[1]) != 0x8b)
    return all;
#if DOP_HAVE_ZLIB
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) throw DatasetError(path + ": cannot start gzip decompression");
  std::string out;
  z.next_in = reinterpret_cast<Bytef*>(all.data());
  z.avail_in = static_cast<uInt>(all.size());
  char buf[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      throw DatasetError(path + ": corrupt gzip data (byte " + std::to_string(z.total_in) + ")");
    }
    out.append(buf, sizeof buf - z.avail_out);
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) {
      inflateEnd(&z);
      throw DatasetError(path + ": truncated gzip data");
    }
  }
  inflateEnd(&z);
  return out;
#else
  throw DatasetError(path + ": is gzip-compressed, and this dop was built without zlib (install zlib1g-dev)");
#endif
}

}  // namespace dop

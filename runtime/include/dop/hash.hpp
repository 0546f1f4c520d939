// A strong content hash for cache keys (the kernel-forms cache, recorded programs): SHA-256 (FIPS 180-4), written
// out here rather than taken from libcrypto because libdop_intercept.so is preloaded into arbitrary applications,
// which may load their own OpenSSL. And a fast one for checksums against damage (bundles, program-cache entries):
// 64-bit FNV-1a. Runtime tier.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace dop {

/// SHA-256 of `data` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

/// SHA-256 of several fields, each prefixed with its length so that no two lists of fields hash alike by
/// concatenation ("ab","c" vs "a","bc").
std::string sha256_fields(std::initializer_list<std::string_view> fields);

/// 64-bit FNV-1a of `n` bytes, continuing from `h` (the offset basis by default): detects damage, not tampering.
inline uint64_t fnv1a64(const void* data, std::size_t n, uint64_t h = 0xcbf29ce484222325ULL) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

}  // namespace dop

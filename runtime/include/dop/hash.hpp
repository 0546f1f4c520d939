// A strong content hash for cache keys (the kernel-forms cache, recorded programs): SHA-256 (FIPS 180-4), written
// out here rather than taken from libcrypto because libdop_intercept.so is preloaded into arbitrary applications,
// which may load their own OpenSSL. Runtime tier.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace dop {

/// SHA-256 of `data` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

/// SHA-256 of several fields, each prefixed with its length so that no two lists of fields hash alike by
/// concatenation ("ab","c" vs "a","bc").
std::string sha256_fields(std::initializer_list<std::string_view> fields);

}  // namespace dop

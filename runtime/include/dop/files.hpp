// Files that several processes may write at once (caches, recordings, bundles): written to a temporary file of
// this process and renamed over the target, so a reader sees the old file or the new one, never half of one. And
// where dop's caches live. Runtime tier.
#pragma once

#include <optional>
#include <string>

namespace dop {

/// Writes `text` to `path` atomically (a temporary file in the same folder, unique to this process and call, then
/// renamed). Throws std::runtime_error naming `path` and the cause.
void write_file_atomically(const std::string& path, const std::string& text);

/// The contents of `path`, or nullopt when it cannot be read.
std::optional<std::string> read_whole_file(const std::string& path);

/// dop's cache root, read from the environment at every call: DOP_CACHE_DIR, else $XDG_CACHE_HOME/dop, else
/// $HOME/.cache/dop; "" when none of them is set. The program cache (programs/) and the forms cache (forms/) live
/// under it.
std::string cache_root();

}  // namespace dop

// Kernel bundles (dop-bundle/1): JSON through nlohmann-json, checked on load.
// Runtime tier.
#include "dop/bundle.hpp"

#include "dop/files.hpp"
#include "dop/hash.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace dop {

namespace {

// FNV-1a 64: detects bundles edited or damaged after they were made (not a
// security measure).
std::string checksum(const std::string& s) {
  char buf[32];
  // The offset basis is FNV's (14695981039346656037) short of its last digit; kept, so that bundles already made
  // still check.
  std::snprintf(buf, sizeof buf, "fnv1a64:%016" PRIx64, fnv1a64(s.data(), s.size(), 1469598103934665603ULL));
  return buf;
}

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw BundleError(path + ": " + what); }

const nlohmann::ordered_json& field(const nlohmann::ordered_json& j, const char* key,
                                    nlohmann::ordered_json::value_t type, const std::string& path,
                                    const std::string& where) {
  if (!j.is_object() || !j.contains(key)) fail(path, "missing field '" + where + key + "'");
  const auto& v = j.at(key);
  if (v.type() != type) {
    const char* want = type == nlohmann::ordered_json::value_t::string ? "a string" : "an object";
    fail(path, "field '" + where + key + "' must be " + want + ", found " + v.type_name());
  }
  return v;
}

}  // namespace

std::string bundle_to_json(const Bundle& b) {
  nlohmann::ordered_json features;
  try {
    features = nlohmann::ordered_json::parse(b.features_json.empty() ? std::string("null") : b.features_json);
  } catch (const nlohmann::ordered_json::exception& e) {
    throw BundleError("bundle of kernel '" + b.kernel + "': the features are not JSON (" + e.what() + ")");
  }
  nlohmann::ordered_json malleable = {
      {"source",
       b.malleable_source.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(b.malleable_source)},
      {"note", b.malleable_note}};
  nlohmann::ordered_json j = {
      {"format", Bundle::format},
      {"made_by", b.made_by},
      {"kernel", {{"file", b.file}, {"name", b.kernel}, {"options", b.build_options}}},
      {"source", b.source},
      {"malleable", malleable},
      {"features", features},
      {"checksums",
       {{"source", checksum(b.source)},
        {"malleable", b.malleable_source.empty() ? std::string() : checksum(b.malleable_source)}}}};
  return j.dump(2) + "\n";
}

Bundle parse_bundle(const std::string& text, const std::string& path) {
  using vt = nlohmann::ordered_json::value_t;
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::ordered_json::parse_error& e) {
    fail(path, std::string("not a valid JSON bundle (") + e.what() + ")");
  }
  if (!j.is_object()) fail(path, "not a dop bundle (the top level is not a JSON object)");
  if (!j.contains("format") || !j["format"].is_string())
    fail(path, std::string("not a dop bundle (no \"format\": \"") + Bundle::format + "\")");
  const std::string format = j["format"].get<std::string>();
  if (format != Bundle::format) {
    if (format.rfind("dop-bundle/", 0) == 0)
      fail(path, "bundle format '" + format + "' is not supported (this dop reads " + Bundle::format + ")");
    fail(path, "not a dop bundle (format '" + format + "', expected " + Bundle::format + ")");
  }
  Bundle b;
  const auto& k = field(j, "kernel", vt::object, path, "");
  b.file = field(k, "file", vt::string, path, "kernel.").get<std::string>();
  b.kernel = field(k, "name", vt::string, path, "kernel.").get<std::string>();
  b.build_options = field(k, "options", vt::string, path, "kernel.").get<std::string>();
  if (b.kernel.empty()) fail(path, "field 'kernel.name' is empty");
  b.source = field(j, "source", vt::string, path, "").get<std::string>();
  const auto& m = field(j, "malleable", vt::object, path, "");
  if (!m.contains("source")) fail(path, "missing field 'malleable.source'");
  if (!m["source"].is_null() && !m["source"].is_string())
    fail(path, std::string("field 'malleable.source' must be a string or null, found ") + m["source"].type_name());
  if (m["source"].is_string()) b.malleable_source = m["source"].get<std::string>();
  b.malleable_note = field(m, "note", vt::string, path, "malleable.").get<std::string>();
  if (j.contains("made_by") && j["made_by"].is_string()) b.made_by = j["made_by"].get<std::string>();
  b.features_json = j.contains("features") ? j["features"].dump() : "null";
  const auto& sums = field(j, "checksums", vt::object, path, "");
  if (field(sums, "source", vt::string, path, "checksums.").get<std::string>() != checksum(b.source))
    fail(path, "the source of kernel '" + b.kernel +
                   "' does not match its checksum (the bundle was changed or "
                   "damaged)");
  const std::string ms = field(sums, "malleable", vt::string, path, "checksums.").get<std::string>();
  if (ms != (b.malleable_source.empty() ? std::string() : checksum(b.malleable_source)))
    fail(path, "the malleable source of kernel '" + b.kernel +
                   "' does not match its checksum (the bundle was changed or "
                   "damaged)");
  if (!b.malleable_source.empty() && (b.malleable_source.find("dop_gpu_mod") == std::string::npos ||
                                      b.malleable_source.find("dop_gpu_alloc") == std::string::npos))
    fail(path, "the malleable source of kernel '" + b.kernel + "' lacks the dop_gpu_mod/dop_gpu_alloc arguments");
  if (b.malleable_source.empty() && b.malleable_note.empty())
    fail(path, "kernel '" + b.kernel + "' has neither a malleable source nor a note saying why");
  return b;
}

void save_bundle(const Bundle& b, const std::string& path) {
  const std::string text = bundle_to_json(b);
  try {
    write_file_atomically(path, text);
  } catch (const std::runtime_error& e) {
    throw BundleError(std::string(e.what()) + " (the bundle)");
  }
}

Bundle load_bundle(const std::string& path) {
  const auto text = read_whole_file(path);
  if (!text) throw BundleError(path + ": cannot read the bundle");
  return parse_bundle(*text, path);
}

std::string first_difference(const std::string& a, const std::string& b) {
  size_t i = 0, line = 1;
  while (i < a.size() && i < b.size() && a[i] == b[i])
    if (a[i++] == '\n') ++line;
  if (i == a.size() && i == b.size()) return {};
  const size_t nl = i == 0 ? std::string::npos : a.rfind('\n', i - 1);
  const size_t start = nl == std::string::npos ? 0 : nl + 1;  // the line's start, the same in both
  // One line of `s` from `start`, shortened to about 60 characters around column `col`; "(end of source)" past it.
  auto shown = [](const std::string& s, size_t start, size_t col) -> std::string {
    if (start >= s.size()) return "(end of source)";
    size_t end = s.find('\n', start);
    if (end == std::string::npos) end = s.size();
    std::string l = s.substr(start, end - start);
    if (!l.empty() && l.back() == '\r') l.replace(l.size() - 1, 1, "\\r");  // a CRLF line ending shows
    const size_t from = col > 40 ? col - 40 : 0;
    std::string out = (from > 0 ? "..." : "") + l.substr(from, 60);
    if (from + 60 < l.size()) out += "...";
    return "'" + out + "'";
  };
  const size_t col = i - start;
  const std::string la = shown(a, start, col), lb = shown(b, start, col);
  return "line " + std::to_string(line) + ": " + la + " against " + lb +
         (la == lb ? " (they differ in the line ending or a final newline)" : "");
}

void check_bundle_matches(const Bundle& b, const std::string& path, const std::string& source,
                          const std::string& kernel, const std::string& build_options) {
  if (b.kernel != kernel)
    throw BundleError(path + ": the bundle is for kernel '" + b.kernel + "', the spec runs kernel '" + kernel + "'");
  if (b.source != source)
    throw BundleError(path + ": the bundle was made from another source of kernel '" + kernel + "' (" + b.file +
                      ") than the one launched; first difference (bundle against kernel) at " +
                      first_difference(b.source, source) + "; make it again with dop bundle");
  if (b.build_options != build_options)
    throw BundleError(path + ": the bundle was made with build options '" + b.build_options +
                      "', the kernel is built with '" + build_options + "'");
}

std::vector<std::pair<std::string, Bundle>> load_bundle_folder(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw BundleError("bundle folder '" + dir + "' is not a folder");
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  std::vector<std::pair<std::string, Bundle>> out;
  for (const auto& p : paths) out.emplace_back(p, load_bundle(p));
  return out;
}

}  // namespace dop

// Recorded programs (dop/kernel_record.hpp): written by the interposer, read by `dop bundle --from-record`.
#include "dop/kernel_record.hpp"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "dop/files.hpp"
#include "dop/hash.hpp"

namespace dop {

namespace {

constexpr const char* kFormat = "dop-record/1";

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}

RecordedProgram parse_record(const std::string& path) {
  const auto text = read_whole_file(path);
  if (!text) bad(path, "cannot read the record");
  const auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || j.value("format", "") != kFormat) bad(path, std::string("not a ") + kFormat + " record");
  const auto str = [&](const char* key) {
    if (!j.contains(key) || !j[key].is_string()) bad(path, std::string("field '") + key + "' must be a string");
    return j[key].get<std::string>();
  };
  RecordedProgram r;
  r.record_path = path;
  const std::string file = str("source");
  if (file.empty() || file.find('/') != std::string::npos) bad(path, "field 'source' must name a file of the folder");
  r.source_path = (std::filesystem::path(path).parent_path() / file).string();
  r.build_options = str("options");
  if (!j.contains("kernels") || !j["kernels"].is_array()) bad(path, "field 'kernels' must be an array of names");
  for (const auto& k : j["kernels"]) {
    if (!k.is_string() || k.get<std::string>().empty()) bad(path, "field 'kernels' must be an array of names");
    r.kernels.push_back(k.get<std::string>());
  }
  const auto source = read_whole_file(r.source_path);
  if (!source) bad(path, "its source " + r.source_path + " cannot be read");
  if (sha256_hex(*source) != str("source_sha256"))
    bad(path, "its source " + r.source_path + " does not match the recorded checksum (changed or damaged)");
  r.source = *source;
  return r;
}

}  // namespace

std::string record_program(const std::string& dir, const std::string& source, const std::string& build_options,
                           const std::vector<std::string>& kernels) {
  const std::string hash = sha256_fields({kFormat, source, build_options});
  const std::filesystem::path base = std::filesystem::path(dir) / hash.substr(0, 32);
  const std::string record = base.string() + ".json";
  std::error_code ec;
  if (std::filesystem::exists(record, ec)) return {};
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot create the record folder (" + ec.message() + ")");
  write_file_atomically(base.string() + ".cl", source);  // the source first: a record never names a missing one
  const nlohmann::ordered_json j = {{"format", kFormat},
                                    {"source", base.filename().string() + ".cl"},
                                    {"options", build_options},
                                    {"kernels", kernels},
                                    {"source_sha256", sha256_hex(source)}};
  write_file_atomically(record, j.dump(2) + "\n");
  return record;
}

std::vector<RecordedProgram> read_records(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw std::runtime_error("record folder '" + dir + "' is not a folder");
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  std::vector<RecordedProgram> out;
  for (const auto& p : paths) out.push_back(parse_record(p));
  return out;
}

}  // namespace dop

// This platform's id, and models checked against it (dop/platform.hpp).
#include "dop/platform.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "dop/files.hpp"

namespace dop {

std::string devices_platform_id(const std::string& cpu_name, const std::string& gpu_name) {
  return (cpu_name.empty() ? std::string("-") : cpu_name) + " + " + (gpu_name.empty() ? std::string("-") : gpu_name);
}

std::string devices_platform_id(const cl::Selection& sel) {
  return devices_platform_id(sel.cpu ? sel.cpu->name : std::string(), sel.gpu ? sel.gpu->name : std::string());
}

namespace {

// This platform's id as named: `platform_id`, else $DOP_PLATFORM_ID, else empty (the devices' own).
std::string named_platform_id(const std::string& platform_id) {
  const char* env = std::getenv("DOP_PLATFORM_ID");
  return !platform_id.empty() ? platform_id : env ? std::string(env) : std::string();
}

// Whether a model file's text can be of the platform `id` or the devices `devices` (a quick look before it is parsed:
// its text names one of them, as JSON writes it). A folder's models of other platforms are then not parsed unless
// none matches (a 0.6 MB model takes tens of ms to parse, inside the application's run under dop exec).
bool may_be_of(const std::string& text, const std::string& id, const std::string& devices) {
  const std::string quoted = nlohmann::json(id.empty() ? devices : id).dump();
  return text.find(quoted) != std::string::npos;
}

// The model of this platform in a folder of models: its file and the model itself, parsed once.
std::pair<std::string, pred::Model> find_platform_model(const std::string& folder, const std::string& platform_id,
                                                        const cl::Selection& sel) {
  namespace fs = std::filesystem;
  const std::string named = named_platform_id(platform_id), devices = devices_platform_id(sel);
  std::error_code ec;
  std::vector<fs::path> candidates;
  for (const auto& e : fs::directory_iterator(folder, ec))
    if (fs::is_regular_file(e.path() / kPlatformModelFile, ec)) candidates.push_back(e.path() / kPlatformModelFile);
  if (ec) throw std::runtime_error(folder + ": cannot be read as a folder of models (" + ec.message() + ")");
  std::sort(candidates.begin(), candidates.end());  // one answer whatever the folder's order
  auto matches = [&](const pred::Model& m) {
    return named.empty() ? (m.platform.id == devices || m.platform.devices == devices) : m.platform.id == named;
  };
  auto label = [](const pred::Model& m) {  // "id (devices)", for the error
    return "'" + m.platform.id + "' (" + (m.platform.devices.empty() ? "devices unnamed" : m.platform.devices) + ")";
  };
  std::vector<std::string> found(candidates.size());  // the labels of those parsed
  for (size_t i = 0; i < candidates.size(); ++i) {
    const std::string path = candidates[i].string();
    const std::optional<std::string> text = read_whole_file(path);
    if (!text) throw pred::ModelError(path + ": cannot be read");
    if (!may_be_of(*text, named, devices)) continue;
    pred::Model m = pred::Model::parse(*text, path);  // a corrupt one is named, not skipped
    if (matches(m)) return {path, std::move(m)};
    found[i] = label(m);
  }
  std::string list;
  for (size_t i = 0; i < candidates.size(); ++i) {  // the others parsed now, for the error
    if (found[i].empty()) {
      pred::Model m = pred::Model::load(candidates[i].string());
      if (matches(m)) return {candidates[i].string(), std::move(m)};  // its text names it in a way may_be_of missed
      found[i] = label(m);
    }
    list += (list.empty() ? "" : ", ") + found[i];
  }
  throw pred::ModelError(folder + ": no " + kPlatformModelFile + " of this platform (" +
                         (named.empty() ? "devices '" + devices + "'" : "'" + named + "'") + ") in its folders" +
                         (list.empty() ? std::string(" (none has one)") : "; found " + list) +
                         "; `dop characterize --out P.json` then `dop retarget MODEL --platform P.json --out " +
                         folder + "/NAME/" + kPlatformModelFile + "` makes one");
}

}  // namespace

std::string platform_model_in(const std::string& folder, const std::string& platform_id, const cl::Selection& sel) {
  return find_platform_model(folder, platform_id, sel).first;
}

std::shared_ptr<pred::Predictor> load_model_for_platform(const std::string& model_path, const std::string& platform_id,
                                                         const cl::Selection& sel) {
  pred::PredictorOptions po;
  po.platform_id = named_platform_id(platform_id);
  if (std::filesystem::is_directory(model_path))  // the folder's model of this platform: its id or devices match
    return std::make_shared<pred::Predictor>(find_platform_model(model_path, platform_id, sel).second, po);
  auto p = std::make_shared<pred::Predictor>(pred::Predictor::load(model_path, po));  // refuses another named id
  const std::string& trained_for = p->model().platform.id;
  const std::string devices = devices_platform_id(sel);
  if (po.platform_id.empty() && trained_for != devices && p->model().platform.devices != devices)
    std::fprintf(stderr,
                 "dop: warning: %s: the model was trained for platform '%s', and this platform is '%s' (its "
                 "devices): using it anyway; DOP_PLATFORM_ID (or dop's --platform-id) names this platform and "
                 "refuses a model of another; `dop characterize --out P.json` then `dop retarget MODEL --platform "
                 "P.json --out M.json` makes one for these devices\n",
                 model_path.c_str(), trained_for.c_str(), devices.c_str());
  return p;
}

}  // namespace dop

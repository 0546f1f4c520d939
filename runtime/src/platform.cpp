// This platform's id, and models checked against it (dop/platform.hpp).
#include "dop/platform.hpp"

#include <cstdio>
#include <cstdlib>

namespace dop {

std::string devices_platform_id(const std::string& cpu_name, const std::string& gpu_name) {
  return (cpu_name.empty() ? std::string("-") : cpu_name) + " + " + (gpu_name.empty() ? std::string("-") : gpu_name);
}

std::string devices_platform_id(const cl::Selection& sel) {
  return devices_platform_id(sel.cpu ? sel.cpu->name : std::string(), sel.gpu ? sel.gpu->name : std::string());
}

std::shared_ptr<pred::Predictor> load_model_for_platform(const std::string& model_path, const std::string& platform_id,
                                                         const cl::Selection& sel) {
  pred::PredictorOptions po;
  po.platform_id = platform_id;
  const char* env = std::getenv("DOP_PLATFORM_ID");
  if (po.platform_id.empty() && env) po.platform_id = env;
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

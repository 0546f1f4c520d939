// Configurations and the grid (dop/config.hpp).
#include "dop/config.hpp"

#include <sstream>
#include <stdexcept>

namespace dop {

Config parse_config(const std::string& text) {
  const auto comma = text.find(',');
  if (comma == std::string::npos)
    throw std::invalid_argument("configuration '" + text + "' must be CPU,GPU utilisations in [0,1], e.g. 1,0.25");
  auto num = [&](const std::string& s, const char* what) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size() || s.empty() || !(v >= 0 && v <= 1))
      throw std::invalid_argument("configuration '" + text + "': " + what + " utilisation '" + s +
                                  "' is not a number in [0,1]");
    return v;
  };
  Config c{num(text.substr(0, comma), "CPU"), num(text.substr(comma + 1), "GPU")};
  if (c.cpu == 0 && c.gpu == 0) throw std::invalid_argument("configuration '" + text + "' uses no device");
  return c;
}

std::string to_string(const Config& c) {
  std::ostringstream os;
  os << c.cpu << "," << c.gpu;
  return os.str();
}

std::vector<Config> Grid::configs() const {
  std::vector<Config> out;
  for (double c : cpu_levels)
    for (double g : gpu_levels)
      if (c > 0 || g > 0) out.push_back({c, g});
  return out;
}

}  // namespace dop

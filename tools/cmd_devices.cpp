// dop devices: platforms and devices with their roles, a table or --json.
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "dop/cl.hpp"

namespace dop::cli {

namespace {

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", b, units[u]);
  return buf;
}

void run_devices(const DeviceFlags& flags, bool as_json) {
  const auto devices = cl::discover();
  cl::Selection sel;
  std::string selection_error;
  try {
    sel = cl::select_devices(devices, flags.cpu, flags.gpu);
  } catch (const std::invalid_argument& e) {
    if (!flags.cpu.empty() || !flags.gpu.empty()) throw;  // an explicit bad flag is an error
    selection_error = e.what();                           // a bad DOP_CPU/DOP_GPU is reported, the list still shown
  }
  auto selected_as = [&](const cl::DeviceInfo& d) -> std::string {
    if (sel.cpu && sel.cpu->device == d.device) return "cpu";
    if (sel.gpu && sel.gpu->device == d.device) return "gpu";
    return "";
  };

  if (as_json) {
    nlohmann::json j;
    j["devices"] = nlohmann::json::array();
    for (const auto& d : devices) {
      j["devices"].push_back({{"id", d.id},
                              {"platform", d.platform_name},
                              {"name", d.name},
                              {"vendor", d.vendor},
                              {"driver_version", d.driver_version},
                              {"opencl_version", d.version},
                              {"type", cl::role_name(d.role)},
                              {"selected_as", selected_as(d)},
                              {"compute_units", d.compute_units},
                              {"global_mem_bytes", d.global_mem_bytes},
                              {"local_mem_bytes", d.local_mem_bytes},
                              {"max_alloc_bytes", d.max_alloc_bytes},
                              {"max_work_group_size", d.max_work_group_size},
                              {"host_unified_memory", d.host_unified_memory},
                              {"fission_by_counts", d.fission_by_counts},
                              {"max_sub_devices", d.max_sub_devices},
                              {"svm", cl::svm_name(d.svm)},
                              {"identity", d.identity()}});
    }
    j["selection"] = {{"cpu", sel.cpu ? nlohmann::json(sel.cpu->id) : nlohmann::json(nullptr)},
                      {"gpu", sel.gpu ? nlohmann::json(sel.gpu->id) : nlohmann::json(nullptr)}};
    if (!selection_error.empty()) j["selection_error"] = selection_error;
    std::cout << j.dump(2) << "\n";
    return;
  }

  if (devices.empty()) {
    std::cout << "no OpenCL devices found (no ICD in /etc/OpenCL/vendors, or no platform reported a device)\n";
    return;
  }
  std::printf("%-10s %-5s %-4s %-36s %5s %11s %-22s %-22s %s\n", "id", "type", "role", "name", "CUs", "memory",
              "OpenCL", "fission", "SVM");
  for (const auto& d : devices) {
    std::string name = d.name.size() > 36 ? d.name.substr(0, 33) + "..." : d.name;
    std::string ver = d.version.size() > 22 ? d.version.substr(0, 22) : d.version;
    std::string role = selected_as(d);
    const std::string fission = d.fission_by_counts ? "by counts, max " + std::to_string(d.max_sub_devices) : "no";
    std::printf("%-10s %-5s %-4s %-36s %5u %11s %-22s %-22s %s\n", d.id.c_str(), cl::role_name(d.role),
                role.empty() ? "-" : role.c_str(), name.c_str(), d.compute_units,
                human_bytes(double(d.global_mem_bytes)).c_str(), ver.c_str(), fission.c_str(),
                cl::svm_name(d.svm).c_str());
  }
  if (!selection_error.empty()) std::printf("\nwarning: %s\n", selection_error.c_str());
}

}  // namespace

void add_devices(CLI::App& app) {
  auto* cmd = app.add_subcommand("devices", "List OpenCL platforms and devices, and which take the cpu/gpu roles");
  auto flags = std::make_shared<DeviceFlags>();
  auto as_json = std::make_shared<bool>(false);
  add_device_flags(cmd, *flags);
  cmd->add_flag("--json", *as_json, "Print JSON instead of a table");
  cmd->callback([flags, as_json] { run_devices(*flags, *as_json); });
}

}  // namespace dop::cli

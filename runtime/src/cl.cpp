#include "dop/cl.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>

namespace dop::cl {

std::string error_name(cl_int code) {
  switch (code) {
#define DOP_CL_ERR(x) \
  case x:             \
    return #x;
    DOP_CL_ERR(CL_SUCCESS)
    DOP_CL_ERR(CL_DEVICE_NOT_FOUND)
    DOP_CL_ERR(CL_DEVICE_NOT_AVAILABLE)
    DOP_CL_ERR(CL_COMPILER_NOT_AVAILABLE)
    DOP_CL_ERR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    DOP_CL_ERR(CL_OUT_OF_RESOURCES)
    DOP_CL_ERR(CL_OUT_OF_HOST_MEMORY)
    DOP_CL_ERR(CL_PROFILING_INFO_NOT_AVAILABLE)
    DOP_CL_ERR(CL_MEM_COPY_OVERLAP)
    DOP_CL_ERR(CL_IMAGE_FORMAT_MISMATCH)
    DOP_CL_ERR(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    DOP_CL_ERR(CL_BUILD_PROGRAM_FAILURE)
    DOP_CL_ERR(CL_MAP_FAILURE)
    DOP_CL_ERR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    DOP_CL_ERR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    DOP_CL_ERR(CL_COMPILE_PROGRAM_FAILURE)
    DOP_CL_ERR(CL_LINKER_NOT_AVAILABLE)
    DOP_CL_ERR(CL_LINK_PROGRAM_FAILURE)
    DOP_CL_ERR(CL_DEVICE_PARTITION_FAILED)
    DOP_CL_ERR(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    DOP_CL_ERR(CL_INVALID_VALUE)
    DOP_CL_ERR(CL_INVALID_DEVICE_TYPE)
    DOP_CL_ERR(CL_INVALID_PLATFORM)
    DOP_CL_ERR(CL_INVALID_DEVICE)
    DOP_CL_ERR(CL_INVALID_CONTEXT)
    DOP_CL_ERR(CL_INVALID_QUEUE_PROPERTIES)
    DOP_CL_ERR(CL_INVALID_COMMAND_QUEUE)
    DOP_CL_ERR(CL_INVALID_HOST_PTR)
    DOP_CL_ERR(CL_INVALID_MEM_OBJECT)
    DOP_CL_ERR(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    DOP_CL_ERR(CL_INVALID_IMAGE_SIZE)
    DOP_CL_ERR(CL_INVALID_SAMPLER)
    DOP_CL_ERR(CL_INVALID_BINARY)
    DOP_CL_ERR(CL_INVALID_BUILD_OPTIONS)
    DOP_CL_ERR(CL_INVALID_PROGRAM)
    DOP_CL_ERR(CL_INVALID_PROGRAM_EXECUTABLE)
    DOP_CL_ERR(CL_INVALID_KERNEL_NAME)
    DOP_CL_ERR(CL_INVALID_KERNEL_DEFINITION)
    DOP_CL_ERR(CL_INVALID_KERNEL)
    DOP_CL_ERR(CL_INVALID_ARG_INDEX)
    DOP_CL_ERR(CL_INVALID_ARG_VALUE)
    DOP_CL_ERR(CL_INVALID_ARG_SIZE)
    DOP_CL_ERR(CL_INVALID_KERNEL_ARGS)
    DOP_CL_ERR(CL_INVALID_WORK_DIMENSION)
    DOP_CL_ERR(CL_INVALID_WORK_GROUP_SIZE)
    DOP_CL_ERR(CL_INVALID_WORK_ITEM_SIZE)
    DOP_CL_ERR(CL_INVALID_GLOBAL_OFFSET)
    DOP_CL_ERR(CL_INVALID_EVENT_WAIT_LIST)
    DOP_CL_ERR(CL_INVALID_EVENT)
    DOP_CL_ERR(CL_INVALID_OPERATION)
    DOP_CL_ERR(CL_INVALID_GL_OBJECT)
    DOP_CL_ERR(CL_INVALID_BUFFER_SIZE)
    DOP_CL_ERR(CL_INVALID_MIP_LEVEL)
    DOP_CL_ERR(CL_INVALID_GLOBAL_WORK_SIZE)
    DOP_CL_ERR(CL_INVALID_PROPERTY)
    DOP_CL_ERR(CL_INVALID_IMAGE_DESCRIPTOR)
    DOP_CL_ERR(CL_INVALID_COMPILER_OPTIONS)
    DOP_CL_ERR(CL_INVALID_LINKER_OPTIONS)
    DOP_CL_ERR(CL_INVALID_DEVICE_PARTITION_COUNT)
    DOP_CL_ERR(CL_INVALID_PIPE_SIZE)
    DOP_CL_ERR(CL_INVALID_DEVICE_QUEUE)
    DOP_CL_ERR(CL_INVALID_SPEC_ID)
    DOP_CL_ERR(CL_MAX_SIZE_RESTRICTION_EXCEEDED)
#undef DOP_CL_ERR
    case -1001:
      return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
      return "CL_UNKNOWN_ERROR(" + std::to_string(code) + ")";
  }
}

namespace {
std::string format_error(cl_int code, const std::string& call, const std::string& context) {
  std::string s = call + ": " + error_name(code) + " (" + std::to_string(code) + ")";
  if (!context.empty()) s += ": " + context;
  return s;
}
}  // namespace

Error::Error(cl_int code, std::string call, std::string context)
    : std::runtime_error(format_error(code, call, context)), code_(code), call_(std::move(call)) {}

BuildError::BuildError(cl_int code, std::string file, std::string log)
    : Error(code, "clBuildProgram", "failed to build " + file + "\n" + log),
      file_(std::move(file)),
      log_(std::move(log)) {}

void check(cl_int code, const char* call, const std::string& context) {
  if (code != CL_SUCCESS) throw Error(code, call, context);
}

const char* role_name(Role r) {
  switch (r) {
    case Role::cpu:
      return "cpu";
    case Role::gpu:
      return "gpu";
    default:
      return "other";
  }
}

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  check(clGetDeviceInfo(d, what, 0, nullptr, &n), "clGetDeviceInfo");
  std::string s(n, '\0');
  check(clGetDeviceInfo(d, what, n, s.data(), nullptr), "clGetDeviceInfo");
  while (!s.empty() && (s.back() == '\0' || std::isspace(static_cast<unsigned char>(s.back())))) s.pop_back();
  return s;
}

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  check(clGetPlatformInfo(p, what, 0, nullptr, &n), "clGetPlatformInfo");
  std::string s(n, '\0');
  check(clGetPlatformInfo(p, what, n, s.data(), nullptr), "clGetPlatformInfo");
  while (!s.empty() && (s.back() == '\0' || std::isspace(static_cast<unsigned char>(s.back())))) s.pop_back();
  return s;
}

std::string DeviceInfo::identity() const { return platform_name + "|" + name + "|" + vendor + "|" + driver_version; }

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A short, stable key for a platform, derived from its name and vendor (not from any vendor list that code paths
// depend on: unknown platforms get the first alphanumeric word of their name).
std::string platform_key(const std::string& name, const std::string& vendor) {
  const std::string n = lower(name), v = lower(vendor);
  struct Known {
    const char* needle;
    const char* key;
  };
  static const Known known[] = {{"portable computing language", "pocl"},
                                {"pocl", "pocl"},
                                {"nvidia", "nvidia"},
                                {"advanced micro devices", "amd"},
                                {"amd", "amd"},
                                {"intel", "intel"},
                                {"rusticl", "rusticl"},
                                {"clover", "clover"},
                                {"apple", "apple"},
                                {"arm", "arm"},
                                {"qualcomm", "qualcomm"}};
  for (const auto& k : known)
    if (n.find(k.needle) != std::string::npos) return k.key;
  for (const auto& k : known)
    if (v.find(k.needle) != std::string::npos) return k.key;
  std::string key;
  for (char c : n) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      key += c;
    else if (!key.empty())
      break;
  }
  return key.empty() ? "platform" : key;
}

bool supports_partition_by_counts(cl_device_id d) {
  size_t n = 0;
  if (clGetDeviceInfo(d, CL_DEVICE_PARTITION_PROPERTIES, 0, nullptr, &n) != CL_SUCCESS || n == 0) return false;
  std::vector<cl_device_partition_property> props(n / sizeof(cl_device_partition_property));
  if (clGetDeviceInfo(d, CL_DEVICE_PARTITION_PROPERTIES, n, props.data(), nullptr) != CL_SUCCESS) return false;
  return std::find(props.begin(), props.end(), CL_DEVICE_PARTITION_BY_COUNTS) != props.end();
}

}  // namespace

std::vector<DeviceInfo> discover() {
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &np);
  if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || np == 0) return {};
  check(err, "clGetPlatformIDs");
  std::vector<cl_platform_id> platforms(np);
  check(clGetPlatformIDs(np, platforms.data(), nullptr), "clGetPlatformIDs");

  std::vector<DeviceInfo> out;
  std::vector<std::pair<std::string, int>> key_counts;  // platforms sharing a key get suffixes: pocl, pocl2, ...
  for (cl_platform_id p : platforms) {
    cl_uint nd = 0;
    err = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd);
    if (err == CL_DEVICE_NOT_FOUND || nd == 0) continue;
    check(err, "clGetDeviceIDs");
    std::vector<cl_device_id> devs(nd);
    check(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, devs.data(), nullptr), "clGetDeviceIDs");

    const std::string pname = platform_string(p, CL_PLATFORM_NAME);
    std::string key = platform_key(pname, platform_string(p, CL_PLATFORM_VENDOR));
    auto it = std::find_if(key_counts.begin(), key_counts.end(), [&](auto& kc) { return kc.first == key; });
    if (it == key_counts.end()) {
      key_counts.emplace_back(key, 1);
    } else {
      key += std::to_string(++it->second);
    }

    for (cl_uint i = 0; i < nd; ++i) {
      DeviceInfo di;
      di.platform = p;
      di.device = devs[i];
      di.platform_key = key;
      di.id = key + ":" + std::to_string(i);
      di.platform_name = pname;
      di.name = device_string(devs[i], CL_DEVICE_NAME);
      di.vendor = device_string(devs[i], CL_DEVICE_VENDOR);
      di.driver_version = device_string(devs[i], CL_DRIVER_VERSION);
      di.version = device_string(devs[i], CL_DEVICE_VERSION);
      di.type = device_value<cl_device_type>(devs[i], CL_DEVICE_TYPE);
      di.role = (di.type & CL_DEVICE_TYPE_GPU) ? Role::gpu : (di.type & CL_DEVICE_TYPE_CPU) ? Role::cpu : Role::other;
      di.compute_units = device_value<cl_uint>(devs[i], CL_DEVICE_MAX_COMPUTE_UNITS);
      di.global_mem_bytes = device_value<cl_ulong>(devs[i], CL_DEVICE_GLOBAL_MEM_SIZE);
      di.local_mem_bytes = device_value<cl_ulong>(devs[i], CL_DEVICE_LOCAL_MEM_SIZE);
      di.max_alloc_bytes = device_value<cl_ulong>(devs[i], CL_DEVICE_MAX_MEM_ALLOC_SIZE);
      di.max_work_group_size = device_value<size_t>(devs[i], CL_DEVICE_MAX_WORK_GROUP_SIZE);
      // CL_DEVICE_HOST_UNIFIED_MEMORY is deprecated in 2.0 but still answered by every ICD we know; treat a failed
      // query as "not unified" (the safe answer: copies instead of zero-copy).
      cl_bool unified = CL_FALSE;
      if (clGetDeviceInfo(devs[i], 0x1035 /* CL_DEVICE_HOST_UNIFIED_MEMORY */, sizeof(unified), &unified, nullptr) !=
          CL_SUCCESS)
        unified = CL_FALSE;
      di.host_unified_memory = unified == CL_TRUE;
      di.fission_by_counts = supports_partition_by_counts(devs[i]);
      cl_uint msd = 0;
      if (clGetDeviceInfo(devs[i], CL_DEVICE_PARTITION_MAX_SUB_DEVICES, sizeof(msd), &msd, nullptr) != CL_SUCCESS)
        msd = 0;
      di.max_sub_devices = msd;
      cl_device_svm_capabilities svm = 0;
      if (clGetDeviceInfo(devs[i], CL_DEVICE_SVM_CAPABILITIES, sizeof(svm), &svm, nullptr) != CL_SUCCESS) svm = 0;
      di.svm = svm;
      out.push_back(std::move(di));
    }
  }
  return out;
}

std::string svm_name(cl_device_svm_capabilities caps) {
  std::string s;
  auto add = [&](cl_device_svm_capabilities bit, const char* name) {
    if (caps & bit) s += (s.empty() ? "" : "+") + std::string(name);
  };
  add(CL_DEVICE_SVM_COARSE_GRAIN_BUFFER, "coarse");
  add(CL_DEVICE_SVM_FINE_GRAIN_BUFFER, "fine");
  add(CL_DEVICE_SVM_FINE_GRAIN_SYSTEM, "system");
  add(CL_DEVICE_SVM_ATOMICS, "atomics");
  return s.empty() ? "none" : s;
}

namespace {

const DeviceInfo* match_spec(const std::vector<DeviceInfo>& devices, const std::string& spec) {
  for (const auto& d : devices)
    if (d.id == spec) return &d;
  for (const auto& d : devices)
    if (d.platform_key == spec) return &d;
  return nullptr;
}

[[noreturn]] void no_such_device(const std::string& role, const std::string& spec,
                                 const std::vector<DeviceInfo>& devices) {
  std::ostringstream os;
  os << "no OpenCL device matches --" << role << " '" << spec << "'; available:";
  if (devices.empty()) os << " none (no OpenCL platform found: is an ICD installed in /etc/OpenCL/vendors?)";
  for (const auto& d : devices) os << " " << d.id << " (" << role_name(d.role) << ", " << d.name << ")";
  throw std::invalid_argument(os.str());
}

std::string env_or(const std::string& v, const char* name) {
  if (!v.empty()) return v;
  const char* e = std::getenv(name);
  return e ? std::string(e) : std::string();
}

}  // namespace

Selection select_devices(const std::vector<DeviceInfo>& devices, const std::string& cpu_spec_in,
                         const std::string& gpu_spec_in) {
  const std::string cpu_spec = env_or(cpu_spec_in, "DOP_CPU");
  const std::string gpu_spec = env_or(gpu_spec_in, "DOP_GPU");
  Selection s;

  if (cpu_spec == "none") {
  } else if (!cpu_spec.empty()) {
    const DeviceInfo* d = match_spec(devices, cpu_spec);
    if (!d) no_such_device("cpu", cpu_spec, devices);
    s.cpu = *d;
  } else {
    for (const auto& d : devices)
      if (d.role == Role::cpu) {
        s.cpu = d;
        break;
      }
  }

  if (gpu_spec == "none") {
  } else if (!gpu_spec.empty()) {
    const DeviceInfo* d = match_spec(devices, gpu_spec);
    if (!d) no_such_device("gpu", gpu_spec, devices);
    s.gpu = *d;
  } else {
    for (const auto& d : devices)
      if (d.role == Role::gpu) {
        s.gpu = d;
        break;
      }
    if (!s.gpu) {  // a second CPU-type device stands in for the GPU (POCL_DEVICES="pthread pthread")
      for (const auto& d : devices)
        if (d.role == Role::cpu && (!s.cpu || d.device != s.cpu->device)) {
          s.gpu = d;
          break;
        }
    }
  }
  if (s.cpu && s.gpu && s.cpu->device == s.gpu->device)
    throw std::invalid_argument("the cpu and gpu roles name the same device '" + s.cpu->id +
                                "': co-execution needs two devices");
  return s;
}

Context create_context(const std::vector<cl_device_id>& devices) {
  cl_int err = CL_SUCCESS;
  cl_context c = clCreateContext(nullptr, static_cast<cl_uint>(devices.size()), devices.data(), nullptr, nullptr, &err);
  check(err, "clCreateContext");
  return Context(c);
}

Queue create_queue(const Context& ctx, cl_device_id device, bool profiling) {
  cl_int err = CL_SUCCESS;
  cl_command_queue_properties props = profiling ? CL_QUEUE_PROFILING_ENABLE : 0;
#ifdef CL_VERSION_2_0
  const cl_queue_properties qp[] = {CL_QUEUE_PROPERTIES, props, 0};
  cl_command_queue q = clCreateCommandQueueWithProperties(ctx.get(), device, qp, &err);
  if (err == CL_INVALID_OPERATION || err == CL_INVALID_VALUE) {  // a 1.2-only platform behind a 3.0 loader
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    q = clCreateCommandQueue(ctx.get(), device, props, &err);
#pragma GCC diagnostic pop
  }
#else
  cl_command_queue q = clCreateCommandQueue(ctx.get(), device, props, &err);
#endif
  check(err, "clCreateCommandQueue");
  return Queue(q);
}

Program build_program(const Context& ctx, const std::vector<cl_device_id>& devices, const std::string& source,
                      const std::string& options, const std::string& file) {
  cl_int err = CL_SUCCESS;
  const char* src = source.c_str();
  const size_t len = source.size();
  Program p(clCreateProgramWithSource(ctx.get(), 1, &src, &len, &err));
  check(err, "clCreateProgramWithSource", file);
  err =
      clBuildProgram(p.get(), static_cast<cl_uint>(devices.size()), devices.data(), options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    std::string log;
    for (cl_device_id d : devices) {
      size_t n = 0;
      if (clGetProgramBuildInfo(p.get(), d, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) != CL_SUCCESS) continue;
      std::string l(n, '\0');
      if (clGetProgramBuildInfo(p.get(), d, CL_PROGRAM_BUILD_LOG, n, l.data(), nullptr) != CL_SUCCESS) continue;
      while (!l.empty() && (l.back() == '\0' || l.back() == '\n')) l.pop_back();
      std::string dname;
      try {
        dname = device_string(d, CL_DEVICE_NAME);
      } catch (const Error&) {
        dname = "device";
      }
      log += "--- build log (" + dname + ") ---\n" + l + "\n";
    }
    throw BuildError(err, file, log);
  }
  return p;
}

Kernel create_kernel(const Program& program, const std::string& name) {
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(program.get(), name.c_str(), &err);
  if (err == CL_INVALID_KERNEL_NAME) {
    std::string avail;
    for (const auto& n : kernel_names(program)) avail += (avail.empty() ? "" : ", ") + n;
    throw Error(err, "clCreateKernel", "no kernel named '" + name + "' (the program has: " + avail + ")");
  }
  check(err, "clCreateKernel", name);
  return Kernel(k);
}

std::vector<std::string> kernel_names(const Program& program) {
  size_t n = 0;
  check(clGetProgramInfo(program.get(), CL_PROGRAM_KERNEL_NAMES, 0, nullptr, &n), "clGetProgramInfo");
  std::string s(n, '\0');
  check(clGetProgramInfo(program.get(), CL_PROGRAM_KERNEL_NAMES, n, s.data(), nullptr), "clGetProgramInfo");
  std::vector<std::string> names;
  std::string cur;
  for (char c : s) {
    if (c == ';' || c == '\0') {
      if (!cur.empty()) names.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) names.push_back(cur);
  return names;
}

Buffer create_buffer(const Context& ctx, cl_mem_flags flags, size_t bytes, void* host_ptr) {
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(ctx.get(), flags, bytes, host_ptr, &err);
  check(err, "clCreateBuffer", std::to_string(bytes) + " bytes");
  return Buffer(m);
}

std::string kernel_name(const Kernel& k) {
  size_t n = 0;
  if (clGetKernelInfo(k.get(), CL_KERNEL_FUNCTION_NAME, 0, nullptr, &n) != CL_SUCCESS) return "<kernel>";
  std::string s(n, '\0');
  if (clGetKernelInfo(k.get(), CL_KERNEL_FUNCTION_NAME, n, s.data(), nullptr) != CL_SUCCESS) return "<kernel>";
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

void set_arg(const Kernel& k, cl_uint index, size_t size, const void* value) {
  cl_int err = clSetKernelArg(k.get(), index, size, value);
  if (err != CL_SUCCESS)
    throw Error(
        err, "clSetKernelArg",
        "kernel '" + kernel_name(k) + "' argument " + std::to_string(index) + " (" + std::to_string(size) + " bytes)");
}

void set_arg_svm(const Kernel& k, cl_uint index, const void* ptr) {
  cl_int err = clSetKernelArgSVMPointer(k.get(), index, ptr);
  if (err != CL_SUCCESS)
    throw Error(err, "clSetKernelArgSVMPointer", "kernel '" + kernel_name(k) + "' argument " + std::to_string(index));
}

Event enqueue_ndrange(const Queue& q, const Kernel& k, const std::vector<size_t>& global,
                      const std::vector<size_t>& local, const std::vector<size_t>& offset,
                      const std::vector<cl_event>& wait) {
  if (global.empty() || global.size() > 3)
    throw std::invalid_argument("enqueue_ndrange: work_dim must be 1, 2 or 3 (got " + std::to_string(global.size()) +
                                ")");
  if (!local.empty() && local.size() != global.size())
    throw std::invalid_argument("enqueue_ndrange: local size has " + std::to_string(local.size()) +
                                " dimensions, global has " + std::to_string(global.size()));
  cl_event ev = nullptr;
  cl_int err = clEnqueueNDRangeKernel(q.get(), k.get(), static_cast<cl_uint>(global.size()),
                                      offset.empty() ? nullptr : offset.data(), global.data(),
                                      local.empty() ? nullptr : local.data(), static_cast<cl_uint>(wait.size()),
                                      wait.empty() ? nullptr : wait.data(), &ev);
  if (err != CL_SUCCESS) {
    auto dims = [](const std::vector<size_t>& v) {
      std::string s;
      for (size_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
      return s.empty() ? std::string("auto") : s;
    };
    throw Error(err, "clEnqueueNDRangeKernel",
                "kernel '" + kernel_name(k) + "' global " + dims(global) + " local " + dims(local));
  }
  return Event(ev);
}

void finish(const Queue& q) { check(clFinish(q.get()), "clFinish"); }

EventTimes event_times(const Event& e) {
  cl_event ev = e.get();
  check(clWaitForEvents(1, &ev), "clWaitForEvents");
  EventTimes t;
  check(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_QUEUED, sizeof(cl_ulong), &t.queued, nullptr),
        "clGetEventProfilingInfo");
  check(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_SUBMIT, sizeof(cl_ulong), &t.submit, nullptr),
        "clGetEventProfilingInfo");
  check(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof(cl_ulong), &t.start, nullptr),
        "clGetEventProfilingInfo");
  check(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof(cl_ulong), &t.end, nullptr),
        "clGetEventProfilingInfo");
  return t;
}

DeviceHandle create_sub_device(const DeviceInfo& parent, cl_uint cores) {
  if (cores == 0 || cores > parent.compute_units)
    throw std::invalid_argument("cannot make a " + std::to_string(cores) + "-core sub-device of " + parent.id + " (" +
                                parent.name + "): it has " + std::to_string(parent.compute_units) + " compute units");
  if (!parent.fission_by_counts)
    throw Error(CL_INVALID_DEVICE_PARTITION_COUNT, "clCreateSubDevices",
                "device " + parent.id + " (" + parent.name + ") does not support CL_DEVICE_PARTITION_BY_COUNTS");
  // Sub-devices are pooled for the life of the process, one per (parent, core count): they are cheap, bounded in
  // number, reused by every executor, and never destroyed while an implementation thread may still complete work on
  // them (PoCL 3.1's pthread device crashed when a sub-device was released right after its last command).
  // Allocated once and never destroyed, so that the pooled devices stay reachable (not leaks) until the process ends.
  static std::mutex pool_mutex;
  static auto* pool_ptr = new std::map<std::pair<cl_device_id, cl_uint>, cl_device_id>();
  auto& pool = *pool_ptr;
  std::lock_guard<std::mutex> lock(pool_mutex);
  cl_device_id& sub = pool[{parent.device, cores}];
  if (!sub) {
    const cl_device_partition_property props[] = {CL_DEVICE_PARTITION_BY_COUNTS,
                                                  static_cast<cl_device_partition_property>(cores),
                                                  CL_DEVICE_PARTITION_BY_COUNTS_LIST_END, 0};
    cl_uint n = 0;
    cl_device_id made = nullptr;
    const cl_int err = clCreateSubDevices(parent.device, props, 1, &made, &n);
    if (err != CL_SUCCESS) pool.erase({parent.device, cores});
    check(err, "clCreateSubDevices",
          "device " + parent.id + " (" + parent.name + "), " + std::to_string(cores) + " cores");
    if (n != 1 || !made) {
      pool.erase({parent.device, cores});
      throw Error(CL_DEVICE_PARTITION_FAILED, "clCreateSubDevices",
                  "device " + parent.id + " returned " + std::to_string(n) + " sub-devices for one count");
    }
    sub = made;  // the pool's reference, never released
  }
  check(clRetainDevice(sub), "clRetainDevice");
  return DeviceHandle(sub);
}

}  // namespace dop::cl

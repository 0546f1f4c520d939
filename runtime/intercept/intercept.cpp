// libdop_intercept.so: runs the kernels of an unmodified OpenCL application with dop (docs/intercept.md).
//
//   LD_PRELOAD=.../libdop_intercept.so DOP_CONFIG=0.5,0.75 DOP_LOG=1 ./app
//
// Every exported entry point forwards to the real implementation (dlsym(RTLD_NEXT)) and records what is needed to
// re-run a kernel elsewhere: program sources and build options, kernels and their arguments, buffers. At
// clEnqueueNDRangeKernel of a kernel whose launch dop supports, the application's queue is finished, the argument
// buffers are read to host memory, a dop::Executor (cached per program, kernel, launch shape and argument kinds)
// runs the kernel on dop's own CPU and GPU devices at DOP_CONFIG, and the buffers the kernel may have written are
// written back. Anything else falls back to the real clEnqueueNDRangeKernel.
//
// dop's own OpenCL calls (the executor lives in this library) come back through these same exported symbols: a
// thread-local guard forwards them untouched on the launching thread, and the executor's GPU driver thread only
// enqueues dop's own kernels, which are never in the tables (a create call under the guard erases any stale entry
// at the returned address).
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_2_0_APIS
#include <CL/cl.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "dop/cl.hpp"
#include "dop/kernel_forms.hpp"
#include "dop/runtime.hpp"
#include "dop/spec.hpp"
#include "forms.hpp"  // kernel forms (DOP_BUNDLES, the forms cache, DOP_BUNDLER) and DOP_RECORD

#define DOP_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// ---------------------------------------------------------------------------------------------------------------
// Re-entrancy guard and the real entry points
// ---------------------------------------------------------------------------------------------------------------

thread_local int t_inside = 0;  // > 0 while this thread runs dop code: its OpenCL calls are forwarded untouched
struct Inside {
  Inside() { ++t_inside; }
  ~Inside() { --t_inside; }
  Inside(const Inside&) = delete;
  Inside& operator=(const Inside&) = delete;
};

template <typename F>
F real_fn(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}
// REAL(name): a function-local static pointer to the next definition of `name` (the ICD loader's).
#define REAL(name) static const auto real_##name = real_fn<decltype(&::name)>(#name)

bool log_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("DOP_LOG");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

void log_line(const std::string& s) {
  if (!log_enabled()) return;
  const std::string line = "dop-intercept: " + s + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

// ---------------------------------------------------------------------------------------------------------------
// Tables
// ---------------------------------------------------------------------------------------------------------------

struct ProgramInfo {
  std::shared_ptr<const std::string> source;  // null: not created from source (binary, IL, built-in, linked)
  std::string options;
  bool built = false;  // by clBuildProgram (clCompileProgram/clLinkProgram are not followed)
};

struct ArgInfo {
  enum class Kind { unset, mem, scalar, local, unsupported } kind = Kind::unset;
  cl_mem mem = nullptr;
  std::vector<unsigned char> bytes;  // scalar value
  size_t size = 0;
  std::string why;  // unsupported: what it is
};

struct KernelInfo {
  cl_program program = nullptr;
  std::string name;
  std::vector<ArgInfo> args;
  // From clGetKernelArgInfo when the implementation answers it (empty otherwise).
  std::vector<cl_kernel_arg_address_qualifier> quals;
  std::vector<std::string> type_names;
  std::string unsupported;  // e.g. clSetKernelExecInfo was used
};

struct BufferInfo {
  size_t size = 0;
  cl_mem_flags flags = 0;
};

struct Tables {
  std::mutex m;
  std::unordered_map<cl_program, ProgramInfo> programs;
  std::unordered_map<cl_kernel, KernelInfo> kernels;
  std::unordered_map<cl_mem, BufferInfo> buffers;
  std::unordered_map<cl_mem, std::string> other_mems;  // images, pipes, sub-buffers: what they are
  std::unordered_set<cl_sampler> samplers;
};
// Never destroyed: the application may call OpenCL from its own static destructors.
Tables& tables() {
  static Tables* t = new Tables;
  return *t;
}

// A create call made by dop itself: the handle is dop's, so no stale application entry may remain at its address.
void forget_mem(cl_mem m) {
  auto& t = tables();
  std::lock_guard<std::mutex> l(t.m);
  t.buffers.erase(m);
  t.other_mems.erase(m);
}
void forget_kernel(cl_kernel k) {
  auto& t = tables();
  std::lock_guard<std::mutex> l(t.m);
  t.kernels.erase(k);
}
void forget_program(cl_program p) {
  auto& t = tables();
  std::lock_guard<std::mutex> l(t.m);
  t.programs.erase(p);
}

void track_other_mem(cl_mem m, const char* what) {
  if (!m) return;
  if (t_inside) return forget_mem(m);
  auto& t = tables();
  std::lock_guard<std::mutex> l(t.m);
  t.buffers.erase(m);
  t.other_mems[m] = what;
}

void track_buffer(cl_mem m, cl_mem_flags flags, size_t size) {
  if (!m) return;
  if (t_inside) return forget_mem(m);
  auto& t = tables();
  std::lock_guard<std::mutex> l(t.m);
  t.other_mems.erase(m);
  t.buffers[m] = BufferInfo{size, flags};
}

// A new application kernel: its argument count and, where the implementation answers, the arguments' address
// qualifiers and type names (a second opinion on what clSetKernelArg was given).
void track_kernel(cl_kernel k, cl_program program, const std::string& name) {
  if (!k) return;
  if (t_inside) return forget_kernel(k);
  KernelInfo ki;
  ki.program = program;
  ki.name = name;
  cl_uint nargs = 0;
  if (clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, nullptr) != CL_SUCCESS)
    ki.unsupported = "the number of kernel arguments is unknown";
  ki.args.resize(nargs);
  bool have_info = nargs > 0;
  std::vector<cl_kernel_arg_address_qualifier> quals(nargs);
  std::vector<std::string> types(nargs);
  for (cl_uint i = 0; i < nargs && have_info; ++i) {
    if (clGetKernelArgInfo(k, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof quals[i], &quals[i], nullptr) != CL_SUCCESS) {
      have_info = false;
      break;
    }
    size_t len = 0;
    if (clGetKernelArgInfo(k, i, CL_KERNEL_ARG_TYPE_NAME, 0, nullptr, &len) == CL_SUCCESS && len > 0) {
      std::string s(len, '\0');
      if (clGetKernelArgInfo(k, i, CL_KERNEL_ARG_TYPE_NAME, len, s.data(), nullptr) == CL_SUCCESS) types[i] = s.c_str();
    }
  }
  if (have_info) {
    ki.quals = std::move(quals);
    ki.type_names = std::move(types);
  }
  auto& t = tables();
  std::lock_guard<std::mutex> l(t.m);
  t.kernels[k] = std::move(ki);
}

std::string kernel_name_of(cl_kernel k) {
  size_t len = 0;
  if (clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, 0, nullptr, &len) != CL_SUCCESS || len == 0) return {};
  std::string s(len, '\0');
  if (clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, len, s.data(), nullptr) != CL_SUCCESS) return {};
  return s.c_str();
}

// ---------------------------------------------------------------------------------------------------------------
// dop side: devices, configuration, executors
// ---------------------------------------------------------------------------------------------------------------

struct DopState {
  std::mutex m;         // guards everything below
  std::mutex launch_m;  // one dop launch at a time: a launch owns both devices
  bool initialised = false;
  std::string init_error;  // non-empty: dop cannot run anything (every launch falls back with this reason)
  dop::cl::Selection sel;
  dop::Config config;
  bool auto_config = false;  // DOP_CONFIG=auto: the model (DOP_MODEL) decides every launch
  std::shared_ptr<const dop::pred::Predictor> predictor;
  std::unique_ptr<dop::KernelFormsResolver> forms;  // the kernels' forms, from the bundles of DOP_BUNDLES
  dop::MemoryMode memory = dop::MemoryMode::automatic;
  // An executor and the host copies of its arguments (reused across launches: no allocation, no page faults).
  struct Entry {
    std::unique_ptr<dop::Executor> exec;
    std::vector<dop::ArgData> args;  // used under launch_m only
  };
  std::map<std::string, std::shared_ptr<Entry>> executors;
  std::map<std::string, std::string> failed;  // executor key -> why it failed (not retried)
};
DopState& dop_state() {
  static DopState* s = new DopState;  // never destroyed (see tables())
  return *s;
}

// Called with dop_state().m held and the guard set.
void initialise(DopState& s) {
  if (s.initialised) return;
  s.initialised = true;
  try {
    s.sel = dop::cl::select_devices(dop::cl::discover());
    if (!s.sel.cpu && !s.sel.gpu) throw std::runtime_error("no OpenCL device for dop");
    const char* cfg = std::getenv("DOP_CONFIG");
    // Kernel bundles (dop bundle): malleable forms, footprints and code features for the interposed kernels. A
    // bundle that cannot be read stops dop (every launch falls back, naming it) rather than being skipped silently.
    s.forms = dop_intercept::make_forms_resolver(log_line);
    if (cfg && *cfg && std::strcmp(cfg, "auto") == 0) {
      const char* model = std::getenv("DOP_MODEL");
      if (!model || !*model) throw std::runtime_error("DOP_CONFIG=auto needs DOP_MODEL=MODEL.json (dop train)");
      dop::pred::PredictorOptions po;
      if (const char* id = std::getenv("DOP_PLATFORM_ID")) po.platform_id = id;
      s.predictor = std::make_shared<dop::pred::Predictor>(dop::pred::Predictor::load(model, po));
      s.auto_config = true;
    } else if (cfg && *cfg) {
      s.config = dop::parse_config(cfg);
    } else {
      s.config = dop::Config{s.sel.cpu ? 1.0 : 0.0, s.sel.gpu ? 1.0 : 0.0};  // all cores, the whole GPU
    }
    const char* mem = std::getenv("DOP_MEMORY");
    if (mem && *mem) s.memory = dop::parse_memory_mode(mem);
  } catch (const std::exception& e) {
    s.init_error = e.what();
  }
}

using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// What an enqueue needs, copied out of the tables under their lock.
struct LaunchPlan {
  std::string kernel_name;
  std::shared_ptr<const std::string> source;
  std::string options;
  std::vector<ArgInfo> args;
  std::vector<BufferInfo> buffers;  // per argument (mem arguments only)
};

// Returns "" and fills `plan` when dop can run this launch, else the reason it cannot.
std::string plan_launch(cl_kernel kernel, cl_uint work_dim, const size_t* offset, const size_t* global,
                        const size_t* local, LaunchPlan& plan, bool& tracked) {
  auto& t = tables();
  std::lock_guard<std::mutex> l(t.m);
  auto kit = t.kernels.find(kernel);
  tracked = kit != t.kernels.end();
  if (!tracked) return "kernel not created through clCreateKernel/clCreateKernelsInProgram";
  const KernelInfo& k = kit->second;
  plan.kernel_name = k.name;
  if (!k.unsupported.empty()) return k.unsupported;
  auto pit = t.programs.find(k.program);
  if (pit == t.programs.end() || !pit->second.source)
    return "program not created from source (binary, IL or built-in kernels)";
  if (!pit->second.built) return "program not built with clBuildProgram (clCompileProgram/clLinkProgram)";
  if (work_dim < 1 || work_dim > 3) return "work_dim " + std::to_string(work_dim);
  if (!global) return "no global size";
  for (cl_uint d = 0; d < work_dim; ++d) {
    if (global[d] == 0) return "empty NDRange";
    if (offset && offset[d] != 0) return "global work offset";
    if (local && (local[d] == 0 || global[d] % local[d] != 0)) return "non-uniform work-groups";
  }
  plan.source = pit->second.source;
  plan.options = pit->second.options;
  plan.args = k.args;
  plan.buffers.assign(k.args.size(), BufferInfo{});
  for (size_t i = 0; i < k.args.size(); ++i) {
    const ArgInfo& a = k.args[i];
    const std::string at = "argument " + std::to_string(i) + ": ";
    if (!k.type_names.empty()) {
      const std::string& tn = k.type_names[i];
      for (const char* bad : {"image", "sampler", "pipe", "queue_t", "event_t"})
        if (tn.find(bad) != std::string::npos) return at + tn;
    }
    switch (a.kind) {
      case ArgInfo::Kind::unset:
        return at + "not set";
      case ArgInfo::Kind::local:
        return at + "__local memory (" + std::to_string(a.size) + " bytes) or a NULL buffer";
      case ArgInfo::Kind::unsupported:
        return at + a.why;
      case ArgInfo::Kind::mem: {
        auto bit = t.buffers.find(a.mem);
        if (bit == t.buffers.end()) return at + "buffer no longer known";
        plan.buffers[i] = bit->second;
        if (!k.quals.empty() && k.quals[i] != CL_KERNEL_ARG_ADDRESS_GLOBAL &&
            k.quals[i] != CL_KERNEL_ARG_ADDRESS_CONSTANT)
          return at + "buffer given for a non-pointer argument";
        const cl_mem_flags f = bit->second.flags;
        if (f & CL_MEM_HOST_NO_ACCESS) return at + "buffer with CL_MEM_HOST_NO_ACCESS";
        if (f & CL_MEM_HOST_WRITE_ONLY) return at + "buffer with CL_MEM_HOST_WRITE_ONLY";
        if ((f & CL_MEM_HOST_READ_ONLY) && !(f & CL_MEM_READ_ONLY))
          return at + "writable buffer with CL_MEM_HOST_READ_ONLY";
        break;
      }
      case ArgInfo::Kind::scalar:
        if (!k.quals.empty() && k.quals[i] != CL_KERNEL_ARG_ADDRESS_PRIVATE)
          return at + "pointer argument given a value that is not a known buffer";
        if (a.size != 1 && a.size != 2 && a.size != 4 && a.size != 8)
          return at + "scalar of " + std::to_string(a.size) + " bytes (vectors and structs are not supported)";
        break;
    }
  }
  // The same buffer twice, written through either: dop's host copies would not alias.
  for (size_t i = 0; i < k.args.size(); ++i)
    for (size_t j = i + 1; j < k.args.size(); ++j)
      if (k.args[i].kind == ArgInfo::Kind::mem && k.args[j].kind == ArgInfo::Kind::mem &&
          k.args[i].mem == k.args[j].mem && !(plan.buffers[i].flags & CL_MEM_READ_ONLY))
        return "arguments " + std::to_string(i) + " and " + std::to_string(j) + " are the same writable buffer";
  return {};
}

dop::Access access_of(cl_mem_flags f) {
  if (f & CL_MEM_READ_ONLY) return dop::Access::read;
  if (f & CL_MEM_WRITE_ONLY) return dop::Access::write;
  return dop::Access::read_write;
}

dop::ElemType scalar_type(size_t bytes) {
  switch (bytes) {
    case 1:
      return dop::ElemType::u8;
    case 2:
      return dop::ElemType::u16;
    case 4:
      return dop::ElemType::u32;
    default:
      return dop::ElemType::u64;
  }
}

std::string dims(cl_uint n, const size_t* v) {
  if (!v) return "auto";
  std::string s;
  for (cl_uint d = 0; d < n; ++d) s += (d ? "x" : "") + std::to_string(v[d]);
  return s;
}

std::string fmt_ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", ms);
  return buf;
}

// Runs the launch with dop. Returns CL_SUCCESS, or throws before anything of the application's has been changed
// (the caller then falls back); an error while writing results back is returned as that call's error code.
cl_int run_with_dop(cl_command_queue queue, cl_uint work_dim, const size_t* global, const size_t* local,
                    cl_uint num_events, const cl_event* wait_list, cl_event* event, const LaunchPlan& plan) {
  const auto t0 = Clock::now();
  DopState& s = dop_state();
  std::shared_ptr<DopState::Entry> entry;
  dop::Config config;
  dop::Spec spec;
  spec.name = plan.kernel_name;
  spec.kernel_name = plan.kernel_name;
  spec.build_options = plan.options;
  spec.global.assign(global, global + work_dim);
  if (local) spec.local.assign(local, local + work_dim);
  std::string key = *plan.source;
  key += '\0' + plan.options + '\0' + plan.kernel_name + '\0' + dims(work_dim, global) + '/' + dims(work_dim, local);
  for (size_t i = 0; i < plan.args.size(); ++i) {
    const ArgInfo& a = plan.args[i];
    dop::ArgSpec as;
    as.name = "arg" + std::to_string(i);
    if (a.kind == ArgInfo::Kind::mem) {
      as.kind = dop::ArgKind::buffer;
      as.type = dop::ElemType::u8;  // byte granularity: the copy-mode merge never mixes two devices' writes
      as.count = plan.buffers[i].size;
      as.access = access_of(plan.buffers[i].flags);
      key += "|b" + std::to_string(as.count) + "a" + std::to_string(int(as.access));
    } else {
      as.kind = dop::ArgKind::scalar;
      as.type = scalar_type(a.size);
      key += "|s" + std::to_string(a.size);
    }
    spec.args.push_back(as);
  }
  {
    std::lock_guard<std::mutex> l(s.m);
    initialise(s);
    if (!s.init_error.empty()) throw std::runtime_error(s.init_error);
    config = s.config;
    auto f = s.failed.find(key);
    if (f != s.failed.end()) throw std::runtime_error("failed before: " + f->second);
    auto& e = s.executors[key];
    if (!e) {
      dop::ExecutorOptions opt;
      opt.memory = s.memory;
      const dop::KernelForms forms =
          dop_intercept::resolve_forms(*s.forms, {*plan.source, plan.kernel_name, plan.options, {}}, log_line);
      // The kernel's argument names: its footprint and the model's size expressions use them.
      if (forms.arg_names.size() == spec.args.size())
        for (size_t i = 0; i < forms.arg_names.size(); ++i) spec.args[i].name = forms.arg_names[i];
      if (s.auto_config) {
        if (!forms.code) {
          s.failed[key] = "DOP_CONFIG=auto: " + forms.no_code;
          throw std::runtime_error(s.failed[key]);
        }
        dop::AutoModel m;
        m.predictor = s.predictor;
        m.kernel_id = forms.origin + ":" + plan.kernel_name;
        opt.model = std::move(m);
      }
      dop::apply_forms(forms, opt);
      auto fresh = std::make_shared<DopState::Entry>();
      fresh->exec = std::make_unique<dop::Executor>(spec, *plan.source, s.sel, opt);
      fresh->args = fresh->exec->make_args();  // in the executor's SVM under DOP_MEMORY=svm
      e = std::move(fresh);
    }
    entry = e;
  }

  // The application's order: the kernel runs after its wait list and after everything queued before it.
  if (num_events > 0) dop::cl::check(clWaitForEvents(num_events, wait_list), "clWaitForEvents", "wait list");
  dop::cl::check(clFinish(queue), "clFinish", "application queue");
  // One dop launch at a time (a launch owns both devices), from reading the arguments to writing results back.
  std::lock_guard<std::mutex> launch_lock(s.launch_m);
  const dop::Spec& es = entry->exec->spec();
  std::vector<dop::ArgData>& args = entry->args;
  for (size_t i = 0; i < es.args.size(); ++i) {
    if (es.args[i].kind == dop::ArgKind::scalar)
      std::memcpy(args[i].data(), plan.args[i].bytes.data(), args[i].bytes);
    else
      dop::cl::check(
          clEnqueueReadBuffer(queue, plan.args[i].mem, CL_TRUE, 0, args[i].bytes, args[i].data(), 0, nullptr, nullptr),
          "clEnqueueReadBuffer", "argument " + std::to_string(i));
  }
  const auto t1 = Clock::now();
  dop::LaunchResult r;
  try {
    r = s.auto_config ? entry->exec->launch_auto(args) : entry->exec->launch(args, config);
    config = r.config;
  } catch (const dop::cl::BuildError& e) {  // will not build for dop's devices: do not try again
    std::lock_guard<std::mutex> l(s.m);
    s.failed[key] = e.what();
    throw;
  } catch (const dop::SpecError& e) {
    std::lock_guard<std::mutex> l(s.m);
    s.failed[key] = e.what();
    throw;
  }
  const auto t2 = Clock::now();
  double out_ms = 0;
  // Results back into the application's buffers. From here on a failure cannot fall back (a read-write buffer
  // may already hold new contents): it is returned.
  for (size_t i = 0; i < es.args.size(); ++i) {
    if (es.args[i].kind != dop::ArgKind::buffer || es.args[i].access == dop::Access::read) continue;
    const cl_int err =
        clEnqueueWriteBuffer(queue, plan.args[i].mem, CL_TRUE, 0, args[i].bytes, args[i].data(), 0, nullptr, nullptr);
    if (err != CL_SUCCESS) {
      log_line("kernel=" + plan.kernel_name + " error: writing argument " + std::to_string(i) +
               " back failed: " + dop::cl::error_name(err));
      return err;
    }
  }
  out_ms = ms_between(t2, Clock::now());
  if (event) {
    *event = nullptr;
    cl_int err = clEnqueueMarkerWithWaitList(queue, 0, nullptr, event);
    if (err != CL_SUCCESS) {  // a completed user event instead
      cl_context ctx = nullptr;
      err = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, nullptr);
      if (err == CL_SUCCESS) *event = clCreateUserEvent(ctx, &err);
      if (err == CL_SUCCESS) err = clSetUserEventStatus(*event, CL_COMPLETE);
      if (err != CL_SUCCESS) return err;
    }
  }
  const auto t3 = Clock::now();
  if (log_enabled()) {
    std::string line = "kernel=" + plan.kernel_name + " global=" + dims(work_dim, global) +
                       " local=" + dims(work_dim, local) + " config=" + dop::to_string(config);
    if (r.automatic) line += " auto=model decide_us=" + fmt_ms(r.decide_us);
    if (r.cpu_cores > 0)
      line += " cpu=" + r.cpu.device + " cores=" + std::to_string(r.cpu_cores) +
              " cpu_wg=" + std::to_string(r.cpu.work_groups);
    else
      line += " cpu=none cpu_wg=0";
    if (!r.gpu.device.empty())
      line += " gpu=" + r.gpu.device + " gpu_units=" + std::to_string(r.gpu_alloc) + "/8" +
              " gpu_wg=" + std::to_string(r.gpu.work_groups);
    else
      line += " gpu=none gpu_wg=0";
    line += std::string(" memory=") + dop::memory_mode_name(r.memory) + " in_ms=" + fmt_ms(ms_between(t0, t1)) +
            " dop_ms=" + fmt_ms(ms_between(t1, t2)) + " out_ms=" + fmt_ms(out_ms) +
            " total_ms=" + fmt_ms(ms_between(t0, t3));
    if (!r.note.empty()) line += " note=\"" + r.note + "\"";
    log_line(line);
  }
  return CL_SUCCESS;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// Exported entry points
// ---------------------------------------------------------------------------------------------------------------

#define MISSING_RET(err)                   \
  do {                                     \
    if (errcode_ret) *errcode_ret = (err); \
    return nullptr;                        \
  } while (0)

DOP_EXPORT cl_program clCreateProgramWithSource(cl_context context, cl_uint count, const char** strings,
                                                const size_t* lengths, cl_int* errcode_ret) {
  REAL(clCreateProgramWithSource);
  if (!real_clCreateProgramWithSource) MISSING_RET(CL_INVALID_OPERATION);
  cl_program p = real_clCreateProgramWithSource(context, count, strings, lengths, errcode_ret);
  if (!p) return p;
  if (t_inside) {
    forget_program(p);
    return p;
  }
  try {
    auto src = std::make_shared<std::string>();
    for (cl_uint i = 0; i < count && strings; ++i) {
      if (!strings[i]) continue;
      if (lengths && lengths[i] > 0)
        src->append(strings[i], lengths[i]);
      else
        src->append(strings[i]);
    }
    auto& t = tables();
    std::lock_guard<std::mutex> l(t.m);
    t.programs[p] = ProgramInfo{std::move(src), {}, false};
  } catch (...) {
    forget_program(p);
  }
  return p;
}

namespace {
// Programs whose kernels dop cannot re-create: remember that they are not from source.
void untracked_program(cl_program p) {
  if (!p) return;
  if (t_inside) return forget_program(p);
  auto& t = tables();
  std::lock_guard<std::mutex> l(t.m);
  t.programs[p] = ProgramInfo{};
}
}  // namespace

DOP_EXPORT cl_program clCreateProgramWithBinary(cl_context context, cl_uint num_devices,
                                                const cl_device_id* device_list, const size_t* lengths,
                                                const unsigned char** binaries, cl_int* binary_status,
                                                cl_int* errcode_ret) {
  REAL(clCreateProgramWithBinary);
  if (!real_clCreateProgramWithBinary) MISSING_RET(CL_INVALID_OPERATION);
  cl_program p =
      real_clCreateProgramWithBinary(context, num_devices, device_list, lengths, binaries, binary_status, errcode_ret);
  untracked_program(p);
  return p;
}

DOP_EXPORT cl_program clCreateProgramWithIL(cl_context context, const void* il, size_t length, cl_int* errcode_ret) {
  REAL(clCreateProgramWithIL);
  if (!real_clCreateProgramWithIL) MISSING_RET(CL_INVALID_OPERATION);
  cl_program p = real_clCreateProgramWithIL(context, il, length, errcode_ret);
  untracked_program(p);
  return p;
}

DOP_EXPORT cl_program clCreateProgramWithBuiltInKernels(cl_context context, cl_uint num_devices,
                                                        const cl_device_id* device_list, const char* kernel_names,
                                                        cl_int* errcode_ret) {
  REAL(clCreateProgramWithBuiltInKernels);
  if (!real_clCreateProgramWithBuiltInKernels) MISSING_RET(CL_INVALID_OPERATION);
  cl_program p = real_clCreateProgramWithBuiltInKernels(context, num_devices, device_list, kernel_names, errcode_ret);
  untracked_program(p);
  return p;
}

DOP_EXPORT cl_program clLinkProgram(cl_context context, cl_uint num_devices, const cl_device_id* device_list,
                                    const char* options, cl_uint num_input_programs, const cl_program* input_programs,
                                    void(CL_CALLBACK* pfn_notify)(cl_program program, void* user_data), void* user_data,
                                    cl_int* errcode_ret) {
  REAL(clLinkProgram);
  if (!real_clLinkProgram) MISSING_RET(CL_INVALID_OPERATION);
  cl_program p = real_clLinkProgram(context, num_devices, device_list, options, num_input_programs, input_programs,
                                    pfn_notify, user_data, errcode_ret);
  untracked_program(p);
  return p;
}

DOP_EXPORT cl_int clBuildProgram(cl_program program, cl_uint num_devices, const cl_device_id* device_list,
                                 const char* options,
                                 void(CL_CALLBACK* pfn_notify)(cl_program program, void* user_data), void* user_data) {
  REAL(clBuildProgram);
  if (!real_clBuildProgram) return CL_INVALID_OPERATION;
  const cl_int r = real_clBuildProgram(program, num_devices, device_list, options, pfn_notify, user_data);
  if (t_inside) return r;
  std::shared_ptr<const std::string> source;  // for DOP_RECORD
  try {
    auto& t = tables();
    std::lock_guard<std::mutex> l(t.m);
    auto it = t.programs.find(program);
    if (it != t.programs.end()) {
      it->second.options = options ? options : "";
      it->second.built = r == CL_SUCCESS;
      if (r == CL_SUCCESS) source = it->second.source;
    }
  } catch (...) {
  }
  if (source) dop_intercept::record_build(program, *source, options ? options : "", log_line);
  return r;
}

DOP_EXPORT cl_int clReleaseProgram(cl_program program) {
  REAL(clReleaseProgram);
  if (!real_clReleaseProgram) return CL_INVALID_OPERATION;
  if (!t_inside && program) {
    cl_uint refs = 0;
    if (clGetProgramInfo(program, CL_PROGRAM_REFERENCE_COUNT, sizeof refs, &refs, nullptr) == CL_SUCCESS && refs == 1)
      forget_program(program);
  }
  return real_clReleaseProgram(program);
}

DOP_EXPORT cl_kernel clCreateKernel(cl_program program, const char* kernel_name, cl_int* errcode_ret) {
  REAL(clCreateKernel);
  if (!real_clCreateKernel) MISSING_RET(CL_INVALID_OPERATION);
  cl_kernel k = real_clCreateKernel(program, kernel_name, errcode_ret);
  try {
    if (k) track_kernel(k, program, kernel_name ? kernel_name : "");
  } catch (...) {
    forget_kernel(k);
  }
  return k;
}

DOP_EXPORT cl_int clCreateKernelsInProgram(cl_program program, cl_uint num_kernels, cl_kernel* kernels,
                                           cl_uint* num_kernels_ret) {
  REAL(clCreateKernelsInProgram);
  if (!real_clCreateKernelsInProgram) return CL_INVALID_OPERATION;
  const cl_int r = real_clCreateKernelsInProgram(program, num_kernels, kernels, num_kernels_ret);
  if (r != CL_SUCCESS || !kernels) return r;
  for (cl_uint i = 0; i < num_kernels; ++i) {
    if (!kernels[i]) continue;
    try {
      track_kernel(kernels[i], program, kernel_name_of(kernels[i]));
    } catch (...) {
      forget_kernel(kernels[i]);
    }
  }
  return r;
}

DOP_EXPORT cl_kernel clCloneKernel(cl_kernel source_kernel, cl_int* errcode_ret) {
  REAL(clCloneKernel);
  if (!real_clCloneKernel) MISSING_RET(CL_INVALID_OPERATION);
  cl_kernel k = real_clCloneKernel(source_kernel, errcode_ret);
  if (!k) return k;
  if (t_inside) {
    forget_kernel(k);
    return k;
  }
  try {
    auto& t = tables();
    std::lock_guard<std::mutex> l(t.m);
    auto it = t.kernels.find(source_kernel);
    if (it != t.kernels.end()) {
      KernelInfo copy = it->second;  // the clone has the source kernel's arguments
      t.kernels[k] = std::move(copy);
    } else {
      t.kernels.erase(k);
    }
  } catch (...) {
    forget_kernel(k);
  }
  return k;
}

DOP_EXPORT cl_int clReleaseKernel(cl_kernel kernel) {
  REAL(clReleaseKernel);
  if (!real_clReleaseKernel) return CL_INVALID_OPERATION;
  if (!t_inside && kernel) {
    cl_uint refs = 0;
    if (clGetKernelInfo(kernel, CL_KERNEL_REFERENCE_COUNT, sizeof refs, &refs, nullptr) == CL_SUCCESS && refs == 1)
      forget_kernel(kernel);
  }
  return real_clReleaseKernel(kernel);
}

DOP_EXPORT cl_int clSetKernelArg(cl_kernel kernel, cl_uint arg_index, size_t arg_size, const void* arg_value) {
  REAL(clSetKernelArg);
  if (!real_clSetKernelArg) return CL_INVALID_OPERATION;
  const cl_int r = real_clSetKernelArg(kernel, arg_index, arg_size, arg_value);
  if (r != CL_SUCCESS || t_inside) return r;
  try {
    auto& t = tables();
    std::lock_guard<std::mutex> l(t.m);
    auto it = t.kernels.find(kernel);
    if (it == t.kernels.end() || arg_index >= it->second.args.size()) return r;
    ArgInfo a;
    a.size = arg_size;
    if (!arg_value) {
      a.kind = ArgInfo::Kind::local;
    } else if (arg_size == sizeof(cl_mem)) {
      cl_mem m = nullptr;
      std::memcpy(&m, arg_value, sizeof m);
      auto other = t.other_mems.find(m);
      if (m && t.buffers.count(m)) {
        a.kind = ArgInfo::Kind::mem;
        a.mem = m;
      } else if (other != t.other_mems.end()) {
        a.kind = ArgInfo::Kind::unsupported;
        a.why = other->second;
      } else if (t.samplers.count(reinterpret_cast<cl_sampler>(m))) {
        a.kind = ArgInfo::Kind::unsupported;
        a.why = "sampler";
      }
    }
    if (a.kind == ArgInfo::Kind::unset) {
      a.kind = ArgInfo::Kind::scalar;
      const auto* b = static_cast<const unsigned char*>(arg_value);
      a.bytes.assign(b, b + arg_size);
    }
    it->second.args[arg_index] = std::move(a);
  } catch (...) {
    forget_kernel(kernel);  // unknown state: never run it with dop
  }
  return r;
}

DOP_EXPORT cl_int clSetKernelArgSVMPointer(cl_kernel kernel, cl_uint arg_index, const void* arg_value) {
  REAL(clSetKernelArgSVMPointer);
  if (!real_clSetKernelArgSVMPointer) return CL_INVALID_OPERATION;
  const cl_int r = real_clSetKernelArgSVMPointer(kernel, arg_index, arg_value);
  if (r != CL_SUCCESS || t_inside) return r;
  try {
    auto& t = tables();
    std::lock_guard<std::mutex> l(t.m);
    auto it = t.kernels.find(kernel);
    if (it != t.kernels.end() && arg_index < it->second.args.size()) {
      ArgInfo a;
      a.kind = ArgInfo::Kind::unsupported;
      a.why = "SVM pointer";
      it->second.args[arg_index] = std::move(a);
    }
  } catch (...) {
    forget_kernel(kernel);
  }
  return r;
}

DOP_EXPORT cl_int clSetKernelExecInfo(cl_kernel kernel, cl_kernel_exec_info param_name, size_t param_value_size,
                                      const void* param_value) {
  REAL(clSetKernelExecInfo);
  if (!real_clSetKernelExecInfo) return CL_INVALID_OPERATION;
  const cl_int r = real_clSetKernelExecInfo(kernel, param_name, param_value_size, param_value);
  if (r != CL_SUCCESS || t_inside) return r;
  try {
    auto& t = tables();
    std::lock_guard<std::mutex> l(t.m);
    auto it = t.kernels.find(kernel);
    if (it != t.kernels.end()) it->second.unsupported = "clSetKernelExecInfo (SVM) was used";
  } catch (...) {
    forget_kernel(kernel);
  }
  return r;
}

DOP_EXPORT cl_mem clCreateBuffer(cl_context context, cl_mem_flags flags, size_t size, void* host_ptr,
                                 cl_int* errcode_ret) {
  REAL(clCreateBuffer);
  if (!real_clCreateBuffer) MISSING_RET(CL_INVALID_OPERATION);
  cl_mem m = real_clCreateBuffer(context, flags, size, host_ptr, errcode_ret);
  try {
    track_buffer(m, flags, size);
  } catch (...) {
    if (m) forget_mem(m);
  }
  return m;
}

DOP_EXPORT cl_mem clCreateBufferWithProperties(cl_context context, const cl_mem_properties* properties,
                                               cl_mem_flags flags, size_t size, void* host_ptr, cl_int* errcode_ret) {
  REAL(clCreateBufferWithProperties);
  if (!real_clCreateBufferWithProperties) MISSING_RET(CL_INVALID_OPERATION);
  cl_mem m = real_clCreateBufferWithProperties(context, properties, flags, size, host_ptr, errcode_ret);
  try {
    track_buffer(m, flags, size);
  } catch (...) {
    if (m) forget_mem(m);
  }
  return m;
}

// Memory objects dop does not run with: remembered so that clSetKernelArg does not mistake them for scalars.
#define TRACK_OTHER(m, what)  \
  try {                       \
    track_other_mem(m, what); \
  } catch (...) {             \
    if (m) forget_mem(m);     \
  }

DOP_EXPORT cl_mem clCreateSubBuffer(cl_mem buffer, cl_mem_flags flags, cl_buffer_create_type buffer_create_type,
                                    const void* buffer_create_info, cl_int* errcode_ret) {
  REAL(clCreateSubBuffer);
  if (!real_clCreateSubBuffer) MISSING_RET(CL_INVALID_OPERATION);
  cl_mem m = real_clCreateSubBuffer(buffer, flags, buffer_create_type, buffer_create_info, errcode_ret);
  TRACK_OTHER(m, "sub-buffer");
  return m;
}

DOP_EXPORT cl_mem clCreateImage(cl_context context, cl_mem_flags flags, const cl_image_format* image_format,
                                const cl_image_desc* image_desc, void* host_ptr, cl_int* errcode_ret) {
  REAL(clCreateImage);
  if (!real_clCreateImage) MISSING_RET(CL_INVALID_OPERATION);
  cl_mem m = real_clCreateImage(context, flags, image_format, image_desc, host_ptr, errcode_ret);
  TRACK_OTHER(m, "image");
  return m;
}

DOP_EXPORT cl_mem clCreateImageWithProperties(cl_context context, const cl_mem_properties* properties,
                                              cl_mem_flags flags, const cl_image_format* image_format,
                                              const cl_image_desc* image_desc, void* host_ptr, cl_int* errcode_ret) {
  REAL(clCreateImageWithProperties);
  if (!real_clCreateImageWithProperties) MISSING_RET(CL_INVALID_OPERATION);
  cl_mem m =
      real_clCreateImageWithProperties(context, properties, flags, image_format, image_desc, host_ptr, errcode_ret);
  TRACK_OTHER(m, "image");
  return m;
}

DOP_EXPORT cl_mem clCreateImage2D(cl_context context, cl_mem_flags flags, const cl_image_format* image_format,
                                  size_t image_width, size_t image_height, size_t image_row_pitch, void* host_ptr,
                                  cl_int* errcode_ret) {
  REAL(clCreateImage2D);
  if (!real_clCreateImage2D) MISSING_RET(CL_INVALID_OPERATION);
  cl_mem m = real_clCreateImage2D(context, flags, image_format, image_width, image_height, image_row_pitch, host_ptr,
                                  errcode_ret);
  TRACK_OTHER(m, "image");
  return m;
}

DOP_EXPORT cl_mem clCreateImage3D(cl_context context, cl_mem_flags flags, const cl_image_format* image_format,
                                  size_t image_width, size_t image_height, size_t image_depth, size_t image_row_pitch,
                                  size_t image_slice_pitch, void* host_ptr, cl_int* errcode_ret) {
  REAL(clCreateImage3D);
  if (!real_clCreateImage3D) MISSING_RET(CL_INVALID_OPERATION);
  cl_mem m = real_clCreateImage3D(context, flags, image_format, image_width, image_height, image_depth, image_row_pitch,
                                  image_slice_pitch, host_ptr, errcode_ret);
  TRACK_OTHER(m, "image");
  return m;
}

DOP_EXPORT cl_mem clCreatePipe(cl_context context, cl_mem_flags flags, cl_uint pipe_packet_size,
                               cl_uint pipe_max_packets, const cl_pipe_properties* properties, cl_int* errcode_ret) {
  REAL(clCreatePipe);
  if (!real_clCreatePipe) MISSING_RET(CL_INVALID_OPERATION);
  cl_mem m = real_clCreatePipe(context, flags, pipe_packet_size, pipe_max_packets, properties, errcode_ret);
  TRACK_OTHER(m, "pipe");
  return m;
}

DOP_EXPORT cl_int clReleaseMemObject(cl_mem memobj) {
  REAL(clReleaseMemObject);
  if (!real_clReleaseMemObject) return CL_INVALID_OPERATION;
  if (!t_inside && memobj) {
    cl_uint refs = 0;
    if (clGetMemObjectInfo(memobj, CL_MEM_REFERENCE_COUNT, sizeof refs, &refs, nullptr) == CL_SUCCESS && refs == 1)
      forget_mem(memobj);
  }
  return real_clReleaseMemObject(memobj);
}

namespace {
void track_sampler(cl_sampler s) {
  if (!s) return;
  auto& t = tables();
  std::lock_guard<std::mutex> l(t.m);
  if (t_inside)
    t.samplers.erase(s);
  else
    t.samplers.insert(s);
}
}  // namespace

DOP_EXPORT cl_sampler clCreateSampler(cl_context context, cl_bool normalized_coords, cl_addressing_mode addressing_mode,
                                      cl_filter_mode filter_mode, cl_int* errcode_ret) {
  REAL(clCreateSampler);
  if (!real_clCreateSampler) MISSING_RET(CL_INVALID_OPERATION);
  cl_sampler s = real_clCreateSampler(context, normalized_coords, addressing_mode, filter_mode, errcode_ret);
  try {
    track_sampler(s);
  } catch (...) {
  }
  return s;
}

DOP_EXPORT cl_sampler clCreateSamplerWithProperties(cl_context context, const cl_sampler_properties* properties,
                                                    cl_int* errcode_ret) {
  REAL(clCreateSamplerWithProperties);
  if (!real_clCreateSamplerWithProperties) MISSING_RET(CL_INVALID_OPERATION);
  cl_sampler s = real_clCreateSamplerWithProperties(context, properties, errcode_ret);
  try {
    track_sampler(s);
  } catch (...) {
  }
  return s;
}

DOP_EXPORT cl_int clEnqueueNDRangeKernel(cl_command_queue command_queue, cl_kernel kernel, cl_uint work_dim,
                                         const size_t* global_work_offset, const size_t* global_work_size,
                                         const size_t* local_work_size, cl_uint num_events_in_wait_list,
                                         const cl_event* event_wait_list, cl_event* event) {
  REAL(clEnqueueNDRangeKernel);
  if (!real_clEnqueueNDRangeKernel) return CL_INVALID_OPERATION;
  auto forward = [&] {
    return real_clEnqueueNDRangeKernel(command_queue, kernel, work_dim, global_work_offset, global_work_size,
                                       local_work_size, num_events_in_wait_list, event_wait_list, event);
  };
  if (t_inside) return forward();
  LaunchPlan plan;
  bool tracked = false;
  std::string why;
  try {
    why = plan_launch(kernel, work_dim, global_work_offset, global_work_size, local_work_size, plan, tracked);
  } catch (const std::exception& e) {
    why = e.what();
  } catch (...) {
    why = "unknown error";
  }
  if (!tracked) return forward();  // not an application kernel dop knows (or dop's own on its driver thread)
  if (why.empty()) {
    Inside guard;
    try {
      return run_with_dop(command_queue, work_dim, global_work_size, local_work_size, num_events_in_wait_list,
                          event_wait_list, event, plan);
    } catch (const std::exception& e) {
      why = std::string("dop failed: ") + e.what();
    } catch (...) {
      why = "dop failed";
    }
  }
  try {
    log_line("kernel=" + plan.kernel_name + " fallback: " + why);
  } catch (...) {
  }
  return forward();
}

// The interposer's launches: clEnqueueNDRangeKernel and clEnqueueTask of the application. Each launch is decided
// first (DOP_CONFIG, or the model under DOP_CONFIG=auto) and then routed:
//   native    the decision is the application's own device in whole: the real enqueue, asynchronous as asked, after
//             any of dop's results its buffers still lack (residency.hpp);
//   dop       dop's co-execution engine on dop's devices, over dop's host copies of the buffers (fetched only where
//             they are not current), its results left there until the application needs them;
//   fallback  what dop cannot run: the real enqueue, with the reason in the log.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <optional>
#include <thread>

#include "interpose.hpp"  // first: it sets which OpenCL APIs are in use
#include "residency.hpp"

#include "forms.hpp"  // kernel forms (DOP_BUNDLES, the forms cache, DOP_BUNDLER) and DOP_RECORD

namespace dop::intercept {
namespace {

// ---------------------------------------------------------------------------------------------------------------
// dop side: devices, configuration, executors
// ---------------------------------------------------------------------------------------------------------------

struct DopState {
  std::atomic<bool> ready{false};  // initialise has run: sel, config, auto_config and init_error no longer change
  std::mutex m;                    // guards everything below (dop launches run one at a time on the worker)
  bool initialised = false;
  std::string init_error;  // non-empty: dop cannot run anything (every launch falls back with this reason)
  cl::Selection sel;
  Config config;
  bool auto_config = false;  // DOP_CONFIG=auto: the model (DOP_MODEL) decides every launch
  std::shared_ptr<const pred::Predictor> predictor;
  std::unique_ptr<KernelFormsResolver> forms;  // the kernels' forms, from the bundles of DOP_BUNDLES
  MemoryMode memory = MemoryMode::automatic;
  // One executor per program, kernel and argument signature, rebound to each launch shape.
  struct Entry {
    std::mutex m;  // guards exec and args
    std::unique_ptr<Executor> exec;
    std::vector<ArgData> args;       // scalars, and the buffers while a launch runs (svm: in the executor's memory)
    int launches = 0;                // that ran: the first runs synchronously, so that a build error can fall back
    std::optional<AutoModel> model;  // DOP_CONFIG=auto: the kernel's code features and memo key
  };
  std::map<std::string, std::shared_ptr<Entry>> executors;
  std::map<std::string, std::string> failed;  // executor key -> why it failed (not retried)
  // DOP_CONFIG=auto: launch times measured per launch class (executor key and shape), both ways (check_auto).
  struct Measured {
    double native_ms = 0, dop_ms = 0;  // the latest timed launch each way
    int native_n = 0, dop_n = 0, launches = 0;
    int interval = 8, next_check = 16;  // when the slower way is timed again
  };
  std::map<std::string, Measured> measured;
  // Per application kernel: its last launch's signature and what decide() derived from it (spec, executor, the
  // model's choice), so that a repeated launch builds none of it again.
  struct KernelMemo {
    std::string signature;
    std::shared_ptr<Entry> entry;
    std::shared_ptr<const Spec> spec;
    std::string key;
    Config model_config;
    double decide_us = 0;
    Measured* measured = nullptr;  // its launch class's times (a map node: stable)
  };
  std::unordered_map<cl_kernel, KernelMemo> memo;
  bool check_auto = true;    // DOP_AUTO_CHECK=0: the model's choice is taken as it is
  bool native_first = true;  // DOP_AUTO_FIRST=model: a launch class starts with the model's choice
  double explore_ms = 50;    // DOP_AUTO_EXPLORE_MS: a class's native time before the model's choice is tried
  bool async = true;         // DOP_ASYNC=0: every dop launch returns when it has run
  // dop's launches run on one worker thread, in submission order; dop's own queue per application context and
  // device serves their fetches (the application's queue waits behind a barrier while an asynchronous launch runs).
  std::mutex worker_m;
  std::condition_variable worker_cv;
  std::deque<std::function<void()>> jobs;
  bool worker_started = false;
  std::map<std::pair<cl_context, cl_device_id>, cl_command_queue> side_queues;
};
DopState& dop_state() {
  static DopState* s = new DopState;  // never destroyed (see tables())
  return *s;
}

// The decision is the application's own device in whole: nothing for dop to add.
bool native_route(const Config& c, cl_device_id app_device, const cl::Selection& sel) {
  if (sel.gpu && app_device == sel.gpu->device) return c.cpu == 0 && c.gpu >= 1;
  if (sel.cpu && app_device == sel.cpu->device) return c.gpu == 0 && c.cpu >= 1;
  return false;
}

cl_device_id queue_device(cl_command_queue q) {
  cl_device_id d = nullptr;
  if (clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof d, &d, nullptr) != CL_SUCCESS) return nullptr;
  return d;
}

// Called with dop_state().m held and the guard set.
void initialise(DopState& s) {
  if (s.initialised) return;
  s.initialised = true;
  try {
    s.sel = cl::select_devices(cl::discover());
    if (!s.sel.cpu && !s.sel.gpu) throw std::runtime_error("no OpenCL device for dop");
    const char* cfg = std::getenv("DOP_CONFIG");
    // Kernel bundles (dop bundle): malleable forms, footprints and code features for the interposed kernels. A
    // bundle that cannot be read stops dop (every launch falls back, naming it) rather than being skipped silently.
    s.forms = dop_intercept::make_forms_resolver(log_line);
    if (cfg && *cfg && std::strcmp(cfg, "auto") == 0) {
      const char* model = std::getenv("DOP_MODEL");
      if (!model || !*model) throw std::runtime_error("DOP_CONFIG=auto needs DOP_MODEL=MODEL.json (dop train)");
      pred::PredictorOptions po;
      if (const char* id = std::getenv("DOP_PLATFORM_ID")) po.platform_id = id;
      s.predictor = std::make_shared<pred::Predictor>(pred::Predictor::load(model, po));
      s.auto_config = true;
    } else if (cfg && *cfg) {
      s.config = parse_config(cfg);
    } else {
      s.config = Config{s.sel.cpu ? 1.0 : 0.0, s.sel.gpu ? 1.0 : 0.0};  // all cores, the whole GPU
    }
    const char* mem = std::getenv("DOP_MEMORY");
    if (mem && *mem) s.memory = parse_memory_mode(mem);
    const char* check = std::getenv("DOP_AUTO_CHECK");
    s.check_auto = !(check && std::strcmp(check, "0") == 0);
    const char* first = std::getenv("DOP_AUTO_FIRST");
    if (first && *first && std::strcmp(first, "native") != 0 && std::strcmp(first, "model") != 0)
      throw std::runtime_error(std::string("DOP_AUTO_FIRST=") + first + ": expected native or model");
    s.native_first = !(first && std::strcmp(first, "model") == 0);
    if (const char* e = std::getenv("DOP_AUTO_EXPLORE_MS"); e && *e) {
      char* end = nullptr;
      s.explore_ms = std::strtod(e, &end);
      if (*end || !(s.explore_ms >= 0))
        throw std::runtime_error(std::string("DOP_AUTO_EXPLORE_MS=") + e + ": expected milliseconds >= 0");
    }
    const char* async = std::getenv("DOP_ASYNC");
    s.async = !(async && std::strcmp(async, "0") == 0);
  } catch (const std::exception& e) {
    s.init_error = e.what();
  }
  s.ready.store(true, std::memory_order_release);
}

// A fixed DOP_CONFIG that is the queue's device in whole (read without the lock once initialise has run).
bool fixed_native(cl_command_queue queue) {
  DopState& s = dop_state();
  if (!s.ready.load(std::memory_order_acquire) || !s.init_error.empty() || s.auto_config) return false;
  return native_route(s.config, queue_device(queue), s.sel);
}

using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// ---------------------------------------------------------------------------------------------------------------
// What dop can run
// ---------------------------------------------------------------------------------------------------------------

// What an enqueue needs, copied out of the tables under their lock.
struct LaunchPlan {
  std::string kernel_name;
  std::shared_ptr<const std::string> source;
  size_t source_hash = 0;
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
  plan.source_hash = pit->second.source_hash;
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
  // The same buffer in two arguments: dop's host copy cannot be two arguments at once.
  for (size_t i = 0; i < k.args.size(); ++i)
    for (size_t j = i + 1; j < k.args.size(); ++j)
      if (k.args[i].kind == ArgInfo::Kind::mem && k.args[j].kind == ArgInfo::Kind::mem &&
          k.args[i].mem == k.args[j].mem)
        return "arguments " + std::to_string(i) + " and " + std::to_string(j) + " are the same buffer";
  return {};
}

Access access_of(cl_mem_flags f) {
  if (f & CL_MEM_READ_ONLY) return Access::read;
  if (f & CL_MEM_WRITE_ONLY) return Access::write;
  return Access::read_write;
}

ElemType scalar_type(size_t bytes) {
  switch (bytes) {
    case 1:
      return ElemType::u8;
    case 2:
      return ElemType::u16;
    case 4:
      return ElemType::u32;
    default:
      return ElemType::u64;
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

// The launch as a spec (buffers of bytes, scalars of their size) and the key of its executor: program, kernel and
// argument signature (not the launch shape: one executor is rebound to each shape).
Spec launch_spec(const LaunchPlan& plan, cl_uint work_dim, const size_t* global, const size_t* local,
                 std::string& key) {
  Spec spec;
  spec.name = plan.kernel_name;
  spec.kernel_name = plan.kernel_name;
  spec.build_options = plan.options;
  spec.global.assign(global, global + work_dim);
  if (local) spec.local.assign(local, local + work_dim);
  key = std::to_string(plan.source_hash) + '\0' + plan.options + '\0' + plan.kernel_name + '\0' +
        std::to_string(work_dim);
  for (size_t i = 0; i < plan.args.size(); ++i) {
    const ArgInfo& a = plan.args[i];
    ArgSpec as;
    as.name = "arg" + std::to_string(i);
    if (a.kind == ArgInfo::Kind::mem) {
      as.kind = ArgKind::buffer;
      as.type = ElemType::u8;  // byte granularity: the copy-mode merge never mixes two devices' writes
      as.count = plan.buffers[i].size;
      as.access = access_of(plan.buffers[i].flags);
      key += "|b" + std::to_string(as.count) + "a" + std::to_string(int(as.access));
    } else {
      as.kind = ArgKind::scalar;
      as.type = scalar_type(a.size);
      key += "|s" + std::to_string(a.size);
    }
    spec.args.push_back(as);
  }
  return spec;
}

// What a launch's decision depends on, besides the kernel: its program, shape, scalar values and buffer sizes.
std::string launch_signature(const LaunchPlan& plan, cl_uint work_dim, const size_t* global, const size_t* local) {
  std::string sig;
  sig.reserve(96 + plan.options.size() + plan.kernel_name.size());
  auto put = [&sig](const void* p, size_t n) { sig.append(static_cast<const char*>(p), n); };
  put(&plan.source_hash, sizeof plan.source_hash);
  sig += plan.options + '\0' + plan.kernel_name + '\0';
  put(&work_dim, sizeof work_dim);
  put(global, work_dim * sizeof(size_t));
  if (local) put(local, work_dim * sizeof(size_t));
  sig += local ? 'l' : 'a';
  for (size_t i = 0; i < plan.args.size(); ++i) {
    const ArgInfo& a = plan.args[i];
    if (a.kind == ArgInfo::Kind::mem) {
      put(&plan.buffers[i].size, sizeof(size_t));
      put(&plan.buffers[i].flags, sizeof(cl_mem_flags));
    } else {
      sig += char(a.bytes.size());
      sig.append(a.bytes.begin(), a.bytes.end());
    }
  }
  return sig;
}

// The integer scalar arguments by name, for the model's size expressions (as unsigned values of their size).
pred::ArgValues scalar_values(const Spec& spec, const LaunchPlan& plan) {
  pred::ArgValues v;
  for (size_t i = 0; i < spec.args.size() && i < plan.args.size(); ++i) {
    const auto& b = plan.args[i].bytes;
    if (spec.args[i].kind != ArgKind::scalar || b.empty() || b.size() > 8) continue;
    uint64_t x = 0;
    std::memcpy(&x, b.data(), b.size());  // little-endian hosts
    v[spec.args[i].name] = int64_t(x);
  }
  return v;
}

// The launch's executor, made at the first launch of its key (decide() has initialised dop and looked for an earlier
// failure of the key). Called with the guard set. Throws (the launch falls back) when dop cannot make one; the reason
// is remembered for the key.
std::shared_ptr<DopState::Entry> executor_for(DopState& s, const LaunchPlan& plan, Spec spec, const std::string& key) {
  std::lock_guard<std::mutex> l(s.m);
  auto& e = s.executors[key];
  if (e) return e;
  ExecutorOptions opt;
  opt.memory = s.memory;
  const KernelForms forms =
      dop_intercept::resolve_forms(*s.forms, {*plan.source, plan.kernel_name, plan.options, {}}, log_line);
  // The kernel's argument names: its footprint and the model's size expressions use them.
  if (forms.arg_names.size() == spec.args.size())
    for (size_t i = 0; i < forms.arg_names.size(); ++i) spec.args[i].name = forms.arg_names[i];
  if (s.auto_config) {
    if (!forms.code) {
      s.failed[key] = "DOP_CONFIG=auto: " + forms.no_code;
      throw std::runtime_error(s.failed[key]);
    }
    AutoModel m;
    m.predictor = s.predictor;
    m.kernel_id = forms.origin + ":" + plan.kernel_name;
    opt.model = std::move(m);
  }
  apply_forms(forms, opt);
  auto fresh = std::make_shared<DopState::Entry>();
  fresh->model = opt.model;
  fresh->exec = std::make_unique<Executor>(spec, *plan.source, s.sel, opt);
  if (s.memory == MemoryMode::svm) {
    fresh->args = fresh->exec->make_args();  // buffers in the executor's SVM: dop's host copies are copied in
  } else {
    const Spec& es = fresh->exec->spec();
    fresh->args.resize(es.args.size());
    for (size_t i = 0; i < es.args.size(); ++i) {
      fresh->args[i].spec = &es.args[i];
      if (es.args[i].kind == ArgKind::scalar) {
        fresh->args[i].storage.resize(1);
        fresh->args[i].bytes = type_size(es.args[i].type);
      }
    }
  }
  e = std::move(fresh);
  return e;
}

// Rebinds the entry's executor to this launch's shape (entry.m held); a shape seen before costs nothing
// (Executor::rebind keeps programs per build key).
void bind_shape(DopState::Entry& entry, const Spec& spec) {
  const Spec& cur = entry.exec->spec();
  if (cur.global == spec.global && cur.local == spec.local) return;
  Spec next = cur;
  next.global = spec.global;
  next.local = spec.local;
  entry.exec->rebind(next);
}

void set_scalars(DopState::Entry& entry, const LaunchPlan& plan) {
  const Spec& es = entry.exec->spec();
  for (size_t i = 0; i < es.args.size(); ++i)
    if (es.args[i].kind == ArgKind::scalar)
      std::memcpy(entry.args[i].data(), plan.args[i].bytes.data(), entry.args[i].bytes);
}

// ---------------------------------------------------------------------------------------------------------------
// Routes
// ---------------------------------------------------------------------------------------------------------------

size_t work_groups(cl_uint work_dim, const size_t* global, const size_t* local) {
  size_t n = 1;
  for (cl_uint d = 0; d < work_dim; ++d) n *= local ? global[d] / local[d] : global[d];
  return n;
}

// What a launch was decided to be.
struct Decision {
  Config config;
  bool native = false;
  bool automatic = false;
  double decide_us = 0;
  // Under DOP_CONFIG=auto with a choice that is not the application's device (check_auto): the launch class, the
  // way this launch runs ("model" as decided, "native" to time the application's device, "measured": the faster
  // way measured), and whether it is timed. ran_ms: the launch's time, for the record.
  DopState::Measured* measured = nullptr;  // the launch class's times (guarded by DopState::m)
  const char* way = "model";
  bool timed = false;
  double ran_ms = -1;
  bool async = false;                      // the dop route returned before the launch ran
  std::shared_ptr<DopState::Entry> entry;  // made for auto decisions and dop launches
  std::shared_ptr<const Spec> spec;        // the launch as a spec (the kernel's argument names)
  std::string key;
};

// The real enqueue, after whatever of dop's results the kernel's buffers lack (and with dop's copies of what it may
// write dropped). `events` are dop's writes the enqueue must wait for.
cl_int enqueue_real(cl_command_queue queue, const KernelBuffers& kb, cl_uint num_events, const cl_event* wait_list,
                    const std::function<cl_int(cl_uint, const cl_event*)>& enqueue) {
  std::vector<cl_event> flushes;
  {
    Inside guard;
    before_real_kernel(queue, kb, flushes);
  }
  const WaitList waits(num_events, wait_list, flushes);
  const cl_int r = enqueue(waits.size(), waits.data());
  release_events(flushes);
  return r;
}

void log_native(const LaunchPlan& plan, cl_uint work_dim, const size_t* global, const size_t* local, const Decision& d,
                cl_device_id dev, const cl::Selection& sel, double enqueue_ms) {
  if (!log_enabled()) return;
  const bool on_gpu = sel.gpu && dev == sel.gpu->device;
  const size_t groups = work_groups(work_dim, global, local);
  std::string line = "kernel=" + plan.kernel_name + " global=" + dims(work_dim, global) +
                     " local=" + dims(work_dim, local) + " config=" + to_string(d.config);
  if (d.automatic) line += std::string(" auto=") + d.way + " decide_us=" + fmt_ms(d.decide_us);
  line += " route=native device=" + (on_gpu ? sel.gpu->id : sel.cpu->id);
  line += " cpu_wg=" + std::to_string(on_gpu ? 0 : groups) + " gpu_wg=" + std::to_string(on_gpu ? groups : 0);
  line += " enqueue_ms=" + fmt_ms(enqueue_ms);
  log_line(line);
}

// Runs the launch with dop, over dop's host copies of the buffers (on dop's worker thread; `states` are the buffer
// arguments' states, marked busy by the submitter; `queue` is dop's own queue on the application's context and
// device, for fetches). Returns CL_SUCCESS, or throws before anything of the application's has been changed (the
// caller then falls back); a failure after which results of earlier dop launches are lost is returned as an error.
cl_int run_with_dop(cl_command_queue queue, const LaunchPlan& plan, Decision& d,
                    const std::vector<std::shared_ptr<BufferState>>& states, double wait_ms) {
  const auto t0 = Clock::now();
  DopState& s = dop_state();
  DopState::Entry& entry = *d.entry;
  // The buffers' states are held for the whole launch (dop launches run one at a time: this is the worker).
  std::lock_guard<std::mutex> entry_lock(entry.m);
  bind_shape(entry, *d.spec);
  const Spec& es = entry.exec->spec();
  std::vector<std::unique_lock<std::mutex>> held;
  {
    std::vector<BufferState*> order;
    for (const auto& st : states)
      if (st) order.push_back(st.get());
    std::sort(order.begin(), order.end());
    for (BufferState* st : order) held.emplace_back(st->m);
  }
  size_t fetched = 0;
  for (size_t i = 0; i < es.args.size(); ++i)
    if (states[i]) fetched += fetch_for_dop(*states[i], queue, es.args[i].access != Access::read);
  set_scalars(entry, plan);
  const bool svm = s.memory == MemoryMode::svm;
  auto take = [&](size_t i) {  // dop's host copy becomes the launch's argument, and back
    if (svm)
      std::memcpy(entry.args[i].data(), states[i]->shadow.data(), states[i]->size);
    else {
      std::swap(entry.args[i].storage, states[i]->shadow.storage);
      entry.args[i].bytes = states[i]->size;
    }
  };
  auto give_back = [&](size_t i) {
    if (svm) {
      if (es.args[i].access != Access::read)
        std::memcpy(states[i]->shadow.data(), entry.args[i].data(), states[i]->size);
    } else {
      std::swap(entry.args[i].storage, states[i]->shadow.storage);
      entry.args[i].bytes = 0;
    }
  };
  for (size_t i = 0; i < es.args.size(); ++i)
    if (states[i]) take(i);
  const auto t1 = Clock::now();
  LaunchResult r;
  try {
    r = d.automatic ? entry.exec->launch_auto(entry.args) : entry.exec->launch(entry.args, d.config);
  } catch (const std::exception& e) {
    for (size_t i = 0; i < es.args.size(); ++i)
      if (states[i]) give_back(i);
    const bool before_running = dynamic_cast<const cl::BuildError*>(&e) || dynamic_cast<const SpecError*>(&e) ||
                                dynamic_cast<const std::logic_error*>(&e);  // invalid_argument included
    if (dynamic_cast<const cl::BuildError*>(&e) || dynamic_cast<const SpecError*>(&e)) {
      std::lock_guard<std::mutex> l(s.m);  // will not build or run for dop's devices: do not try again
      s.failed[d.key] = e.what();
    }
    if (before_running) throw;
    bool lost = false;
    for (size_t i = 0; i < es.args.size(); ++i)
      if (states[i] && es.args[i].access != Access::read && !dop_failed(*states[i])) lost = true;
    if (!lost) throw;  // the application's copies are current: the real launch runs
    log_line("kernel=" + plan.kernel_name + " error: dop failed after earlier results were lost: " + e.what());
    return CL_OUT_OF_RESOURCES;
  }
  for (size_t i = 0; i < es.args.size(); ++i)
    if (states[i]) give_back(i);
  d.config = r.config;
  ++entry.launches;
  const auto t2 = Clock::now();
  // dop's results stay in its copies; the application's are stale there until it needs them (eager buffers: now).
  for (size_t i = 0; i < es.args.size(); ++i)
    if (states[i] && es.args[i].access != Access::read) dop_wrote(*states[i], queue, 0, states[i]->size);
  const auto t3 = Clock::now();
  d.ran_ms = ms_between(t1, t3);
  const cl_uint work_dim = cl_uint(d.spec->global.size());
  const size_t* global = d.spec->global.data();
  const size_t* local = d.spec->local.empty() ? nullptr : d.spec->local.data();
  if (log_enabled()) {
    std::string line = "kernel=" + plan.kernel_name + " global=" + dims(work_dim, global) +
                       " local=" + dims(work_dim, local) + " config=" + to_string(d.config);
    if (r.automatic) line += std::string(" auto=") + d.way + " decide_us=" + fmt_ms(d.decide_us);
    line += " route=dop";
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
    if (r.programs_built + r.programs_from_cache > 0)
      line += " built=" + std::to_string(r.programs_built) + " cached=" + std::to_string(r.programs_from_cache) +
              " build_ms=" + fmt_ms(r.build_ms);
    line += std::string(" memory=") + memory_mode_name(r.memory) + " fetched=" + std::to_string(fetched) +
            " in_ms=" + fmt_ms(wait_ms + ms_between(t0, t1)) + " dop_ms=" + fmt_ms(ms_between(t1, t2)) +
            " out_ms=" + fmt_ms(ms_between(t2, t3)) + " total_ms=" + fmt_ms(wait_ms + ms_between(t0, Clock::now()));
    if (d.async) line += " async=1";
    if (!r.note.empty()) line += " note=\"" + r.note + "\"";
    log_line(line);
  }
  return CL_SUCCESS;
}

// The launch class of a launch: its executor key and its work-items to the nearest power of two, so that an NDRange
// that shrinks step by step still meets its class again. Called with s.m held, once per kernel and signature.
DopState::Measured* launch_class(DopState& s, const std::string& key, cl_uint work_dim, const size_t* global) {
  size_t items = 1;
  for (cl_uint i = 0; i < work_dim; ++i) items *= global[i];
  int bucket = 0;
  while (items > 1) items >>= 1, ++bucket;
  return &s.measured[key + '\0' + std::to_string(bucket)];
}

// The model chose something other than the application's own device: the choice is checked by measurement, per
// launch class (launch_class). A class starts on the application's device in
// whole, timed (by finishing the queue before and after it). Trying the model's choice costs a launch or more of
// fetching, building and flushing, so it is tried (timed) only once the class's launches have taken explore_ms on
// the application's device: what a short run could never earn back is not spent. Then each launch runs the faster
// way last measured; the slower is timed again after 16, 32, 64, ... launches while it is within 1.5x of the faster,
// and never again otherwise. DOP_AUTO_FIRST=model starts a class with the model's choice instead.
void check_against_native(DopState& s, Decision& d, const Config& native_config) {
  std::lock_guard<std::mutex> l(s.m);
  DopState::Measured& m = *d.measured;
  const int launch = m.launches++;
  bool native;
  if (m.native_n == 0 && m.dop_n == 0) {
    native = s.native_first;
    d.timed = true;
  } else if (m.native_n == 0) {
    native = d.timed = true;
  } else if (m.dop_n == 0) {
    native = double(launch) * m.native_ms < s.explore_ms;
    d.timed = !native;
  } else {
    const bool native_wins = m.native_ms <= m.dop_ms;
    const double ratio = native_wins ? m.dop_ms / std::max(m.native_ms, 1e-6) : m.native_ms / std::max(m.dop_ms, 1e-6);
    d.timed = launch >= m.next_check && ratio < 1.5;  // the slower way, timed again
    if (d.timed) m.next_check = launch + (m.interval *= 2);
    native = native_wins != d.timed;
  }
  d.native = native;
  if (native) d.config = native_config;
  d.way = m.native_n > 0 && m.dop_n > 0 ? "measured" : native ? "native" : "model";
}

// ---------------------------------------------------------------------------------------------------------------
// dop's worker: every dop launch runs there, in submission order
// ---------------------------------------------------------------------------------------------------------------

void submit(DopState& s, std::function<void()> job) {
  std::lock_guard<std::mutex> l(s.worker_m);
  if (!s.worker_started) {
    s.worker_started = true;
    std::thread([&s] {
      Inside guard;  // every OpenCL call of the worker is dop's own
      for (;;) {
        std::function<void()> next;
        {
          std::unique_lock<std::mutex> wl(s.worker_m);
          s.worker_cv.wait(wl, [&] { return !s.jobs.empty(); });
          next = std::move(s.jobs.front());
          s.jobs.pop_front();
        }
        next();
      }
    }).detach();  // never joined: the state is never destroyed (the application may launch from static destructors)
  }
  s.jobs.push_back(std::move(job));
  s.worker_cv.notify_one();
}

// dop's own queue on the context and device of the application's queue (made once; called with the guard set).
cl_command_queue side_queue(DopState& s, cl_command_queue app_queue) {
  cl_context ctx = nullptr;
  cl_device_id dev = nullptr;
  cl::check(clGetCommandQueueInfo(app_queue, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, nullptr), "clGetCommandQueueInfo",
            "application queue");
  cl::check(clGetCommandQueueInfo(app_queue, CL_QUEUE_DEVICE, sizeof dev, &dev, nullptr), "clGetCommandQueueInfo",
            "application queue");
  std::lock_guard<std::mutex> l(s.m);
  cl_command_queue& q = s.side_queues[{ctx, dev}];
  if (!q) {
    cl_int err = CL_SUCCESS;
    q = clCreateCommandQueue(ctx, dev, 0, &err);
    if (err != CL_SUCCESS) {
      q = nullptr;
      cl::check(err, "clCreateCommandQueue", "dop's queue on the application's device");
    }
  }
  return q;
}

// The buffer arguments' states, each marked busy until `done` (commands of the application's on them wait).
std::vector<std::shared_ptr<BufferState>> claim_buffers(const LaunchPlan& plan) {
  std::vector<std::shared_ptr<BufferState>> states(plan.args.size());
  for (size_t i = 0; i < plan.args.size(); ++i) {
    if (plan.args[i].kind != ArgInfo::Kind::mem) continue;
    states[i] = buffer_state(plan.args[i].mem, true);
    if (!states[i]) throw std::runtime_error("argument " + std::to_string(i) + ": buffer no longer known");
  }
  for (const auto& st : states)
    if (st) {
      std::lock_guard<std::mutex> l(st->m);
      ++st->busy;
    }
  return states;
}
void done(const std::vector<std::shared_ptr<BufferState>>& states) {
  for (const auto& st : states)
    if (st) {
      std::lock_guard<std::mutex> l(st->m);
      if (--st->busy == 0) st->idle.notify_all();
    }
}

// A dop launch, run on the worker. Synchronous (the first launch of an executor, a timed one, DOP_ASYNC=0): the
// caller waits for its wait list, its queue and the launch, and falls back when dop fails before running. Otherwise
// asynchronous: a marker after the application's earlier commands and wait list starts it, a barrier on a user
// event holds the application's queue until it has run, and the call returns at once with the barrier's event.
cl_int launch_with_dop(cl_command_queue queue, cl_uint num_events, const cl_event* wait_list, cl_event* event,
                       const LaunchPlan& plan, Decision& d) {
  DopState& s = dop_state();
  const cl_command_queue side = side_queue(s, queue);
  d.async = s.async && !d.timed && d.entry->launches > 0;
  auto states = claim_buffers(plan);
  if (!d.async) {
    const auto t0 = Clock::now();
    try {
      // The application's order: the kernel runs after its wait list and after everything queued before it.
      if (num_events > 0) cl::check(clWaitForEvents(num_events, wait_list), "clWaitForEvents", "wait list");
      cl::check(clFinish(queue), "clFinish", "application queue");
    } catch (...) {
      done(states);
      throw;
    }
    const double wait_ms = ms_between(t0, Clock::now());
    std::promise<cl_int> result;
    submit(s, [&] {  // the caller's locals live until the promise is kept: it is kept last
      cl_int r = CL_SUCCESS;
      std::exception_ptr failed;
      try {
        r = run_with_dop(side, plan, d, states, wait_ms);
      } catch (...) {
        failed = std::current_exception();
      }
      done(states);
      if (failed)
        result.set_exception(failed);
      else
        result.set_value(r);
    });
    const cl_int r = result.get_future().get();  // rethrows: the caller falls back
    if (r != CL_SUCCESS || !event) return r;
    *event = nullptr;
    cl_int err = clEnqueueMarkerWithWaitList(queue, 0, nullptr, event);
    if (err != CL_SUCCESS) {  // a completed user event instead
      cl_context ctx = nullptr;
      err = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, nullptr);
      if (err == CL_SUCCESS) *event = clCreateUserEvent(ctx, &err);
      if (err == CL_SUCCESS) err = clSetUserEventStatus(*event, CL_COMPLETE);
    }
    return err;
  }
  cl_context ctx = nullptr;
  cl_int err = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, nullptr);
  cl_event ran = err == CL_SUCCESS ? clCreateUserEvent(ctx, &err) : nullptr, before = nullptr, after = nullptr;
  if (err == CL_SUCCESS) err = clEnqueueMarkerWithWaitList(queue, num_events, wait_list, &before);
  if (err == CL_SUCCESS) err = clEnqueueBarrierWithWaitList(queue, 1, &ran, &after);
  if (err != CL_SUCCESS) {  // nothing enqueued that waits for `ran` survives: it is completed and let go
    if (ran) clSetUserEventStatus(ran, CL_COMPLETE), clReleaseEvent(ran);
    if (before) clReleaseEvent(before);
    done(states);
    throw cl::Error(err, "clEnqueueBarrierWithWaitList", "the application's queue, for an asynchronous dop launch");
  }
  if (event)
    *event = after;
  else
    clReleaseEvent(after);
  submit(s, [plan, d, states, side, ran, before]() mutable {
    cl_int status = CL_COMPLETE;
    const auto t0 = Clock::now();
    try {
      cl::check(clWaitForEvents(1, &before), "clWaitForEvents", "the application's earlier commands");
      if (run_with_dop(side, plan, d, states, ms_between(t0, Clock::now())) != CL_SUCCESS) status = CL_OUT_OF_RESOURCES;
    } catch (const std::exception& e) {
      // The launch returned long ago: its event says it failed, and the commands waiting for it fail with it.
      // run_with_dop has dropped dop's copies of what the kernel may have written; the others stay as they are.
      status = CL_OUT_OF_RESOURCES;
      log_line("kernel=" + plan.kernel_name + " error: asynchronous dop launch failed: " + e.what());
    }
    done(states);
    clSetUserEventStatus(ran, status);
    clReleaseEvent(ran);
    clReleaseEvent(before);
  });
  return CL_SUCCESS;
}

// Decides the launch: DOP_CONFIG, or the model (which needs the launch's executor). Returns why dop cannot run it
// ("" when it can): reasons that hold for every launch of a kernel come back as a string, not an exception, so that
// a fallback costs the launch no more than the real enqueue. Throws only at a kernel's first launch, when its
// executor cannot be made (the launch falls back).
std::string decide(cl_command_queue queue, cl_kernel kernel, const LaunchPlan& plan, cl_uint work_dim,
                   const size_t* global, const size_t* local, const std::string& not_runnable, Decision& d) {
  DopState& s = dop_state();
  {
    std::lock_guard<std::mutex> l(s.m);
    initialise(s);
    if (!s.init_error.empty()) return s.init_error;
    d.config = s.config;
    d.automatic = s.auto_config;
  }
  if (!d.automatic) {
    d.native = native_route(d.config, queue_device(queue), s.sel);
    if (d.native) return {};
  }
  if (!not_runnable.empty()) return not_runnable;
  const std::string signature = launch_signature(plan, work_dim, global, local);
  bool known = false;
  {
    std::lock_guard<std::mutex> l(s.m);
    auto m = s.memo.find(kernel);
    if (m != s.memo.end() && m->second.signature == signature) {
      d.entry = m->second.entry;
      d.spec = m->second.spec;
      d.key = m->second.key;
      d.measured = m->second.measured;
      if (d.automatic) d.config = m->second.model_config, d.decide_us = m->second.decide_us;
      known = true;
    }
  }
  if (!known) {
    auto spec = std::make_shared<Spec>(launch_spec(plan, work_dim, global, local, d.key));
    {
      std::lock_guard<std::mutex> l(s.m);
      auto f = s.failed.find(d.key);
      if (f != s.failed.end()) return "failed before: " + f->second;
    }
    d.entry = executor_for(s, plan, *spec, d.key);
    {
      std::lock_guard<std::mutex> l(d.entry->m);  // the kernel's argument names, from its forms
      const Spec& es = d.entry->exec->spec();
      for (size_t i = 0; i < spec->args.size() && i < es.args.size(); ++i) spec->args[i].name = es.args[i].name;
    }
    d.spec = spec;
    if (d.automatic) {
      // The launch's shape and integer scalars straight to the predictor: the executor is rebound only if dop runs
      // the launch. A launch that leaves the work-group size open is asked at the executor's choice.
      const auto t = Clock::now();
      pred::LaunchShape shape;
      shape.work_dim = work_dim;
      std::vector<size_t> wg;
      if (!local) {
        std::lock_guard<std::mutex> l(d.entry->m);
        wg = d.entry->exec->local_size();
      }
      for (cl_uint i = 0; i < work_dim; ++i) {
        shape.global[i] = global[i];
        shape.local[i] = local ? local[i] : (i < wg.size() ? wg[i] : 1);
      }
      const pred::Decision pd = d.entry->model->predictor->decide(d.entry->model->kernel_id, d.entry->model->code,
                                                                  shape, scalar_values(*spec, plan));
      d.decide_us = ms_between(t, Clock::now()) * 1e3;
      d.config = pd.config;
    }
    std::lock_guard<std::mutex> l(s.m);
    d.measured = launch_class(s, d.key, work_dim, global);
    s.memo[kernel] = DopState::KernelMemo{signature, d.entry, d.spec, d.key, d.config, d.decide_us, d.measured};
  }
  if (d.automatic) {
    const cl_device_id dev = queue_device(queue);
    d.native = native_route(d.config, dev, s.sel);
    const bool on_gpu = s.sel.gpu && dev == s.sel.gpu->device, on_cpu = s.sel.cpu && dev == s.sel.cpu->device;
    if (!d.native && (on_gpu || on_cpu) && s.check_auto)
      check_against_native(s, d, on_gpu ? Config{0, 1} : Config{1, 0});
  }
  return {};
}

// Record of a timed launch (DOP_CONFIG=auto, check_auto).
void record_time(DopState& s, const Decision& d) {
  if (!d.timed || d.ran_ms < 0 || !d.measured) return;
  std::lock_guard<std::mutex> l(s.m);
  DopState::Measured& m = *d.measured;
  (d.native ? m.native_ms : m.dop_ms) = d.ran_ms;  // the latest: a first launch also builds dop's programs
  ++(d.native ? m.native_n : m.dop_n);
}

std::string describe(const std::exception_ptr& p) {
  try {
    std::rethrow_exception(p);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

}  // namespace

void prepare_dop() {
  try {
    Inside guard;
    DopState& s = dop_state();
    std::lock_guard<std::mutex> l(s.m);
    initialise(s);
  } catch (...) {
  }
}

}  // namespace dop::intercept

using namespace dop::intercept;

DOP_EXPORT cl_int clEnqueueNDRangeKernel(cl_command_queue command_queue, cl_kernel kernel, cl_uint work_dim,
                                         const size_t* global_work_offset, const size_t* global_work_size,
                                         const size_t* local_work_size, cl_uint num_events_in_wait_list,
                                         const cl_event* event_wait_list, cl_event* event) {
  REAL(clEnqueueNDRangeKernel);
  if (!real_clEnqueueNDRangeKernel) return CL_INVALID_OPERATION;
  auto real = [&](cl_uint n, const cl_event* list) {
    return real_clEnqueueNDRangeKernel(command_queue, kernel, work_dim, global_work_offset, global_work_size,
                                       local_work_size, n, list, event);
  };
  if (t_inside) return real(num_events_in_wait_list, event_wait_list);
  // The fast path: a fixed configuration that is the queue's device in whole, and no buffer dop ever ran with: nothing
  // to decide, flush or log.
  if (!log_enabled() && !any_buffer_state() && fixed_native(command_queue))
    return real(num_events_in_wait_list, event_wait_list);
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
  // Every kernel the application creates is tracked: an untracked one is dop's own, on its driver threads.
  if (!tracked) return real(num_events_in_wait_list, event_wait_list);
  const KernelBuffers kb = kernel_buffers(kernel);
  auto fallback = [&](const std::string& reason) {
    try {
      log_line("kernel=" + plan.kernel_name + " fallback: " + reason);
    } catch (...) {
    }
    return enqueue_real(command_queue, kb, num_events_in_wait_list, event_wait_list, real);
  };
  Decision d;
  try {
    Inside guard;
    const std::string cannot = decide(command_queue, kernel, plan, work_dim, global_work_size, local_work_size, why, d);
    if (!cannot.empty()) return fallback(cannot);
  } catch (...) {
    return fallback(why.empty() ? "dop failed: " + describe(std::current_exception()) : why);
  }
  if (d.native) {
    if (d.timed) clFinish(command_queue);  // a timed launch starts on an idle queue and is timed to its end
    const auto t = Clock::now();
    const cl_int r = enqueue_real(command_queue, kb, num_events_in_wait_list, event_wait_list, real);
    if (d.timed && r == CL_SUCCESS && clFinish(command_queue) == CL_SUCCESS) d.ran_ms = ms_between(t, Clock::now());
    try {
      Inside guard;
      record_time(dop_state(), d);
      log_native(plan, work_dim, global_work_size, local_work_size, d, queue_device(command_queue), dop_state().sel,
                 ms_between(t, Clock::now()));
    } catch (...) {
    }
    return r;
  }
  if (!why.empty()) return fallback(why);
  try {
    Inside guard;
    const cl_int r = launch_with_dop(command_queue, num_events_in_wait_list, event_wait_list, event, plan, d);
    record_time(dop_state(), d);
    return r;
  } catch (...) {
    return fallback("dop failed: " + describe(std::current_exception()));
  }
}

// A task is a kernel of one work-item: it runs as the application asked, after dop's results its buffers lack.
DOP_EXPORT cl_int clEnqueueTask(cl_command_queue command_queue, cl_kernel kernel, cl_uint num_events_in_wait_list,
                                const cl_event* event_wait_list, cl_event* event) {
  REAL(clEnqueueTask);
  if (!real_clEnqueueTask) return CL_INVALID_OPERATION;
  auto real = [&](cl_uint n, const cl_event* list) {
    return real_clEnqueueTask(command_queue, kernel, n, list, event);
  };
  if (t_inside) return real(num_events_in_wait_list, event_wait_list);
  return enqueue_real(command_queue, kernel_buffers(kernel), num_events_in_wait_list, event_wait_list, real);
}

// What dop can run of a launch and what it decides for it: the launch's plan from the tables, its spec and executor,
// DOP_CONFIG or the model (memoised per application kernel), and auto's check against the application's device.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#include "launch.hpp"

#include "forms.hpp"  // kernel forms (DOP_BUNDLES, the forms cache, DOP_BUNDLER) and DOP_RECORD

namespace dop::intercept {
namespace {

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

// A scalar's type as the kernel declares it ("int", "const long"), where it is one of the spec's types of the size the
// application gives; `untyped` (the unsigned type of that size) otherwise: typedefs, vectors, another size.
ElemType declared_type(std::string declared, ElemType untyped) {
  for (const char* q : {"const ", "volatile "})
    while (declared.compare(0, std::strlen(q), q) == 0) declared.erase(0, std::strlen(q));
  try {
    const ElemType t = parse_type(declared);
    return type_size(t) == type_size(untyped) ? t : untyped;
  } catch (const SpecError&) {
    return untyped;
  }
}

// Writes a key's fields into `key` in place, in room made once for at most `most` bytes (the key is cut to what was
// written when the writer goes), rather than appending field by field: a key is made at every launch that is not
// repeated from the thread's cache (the class key) and at each class's first (the executor's).
class KeyWriter {
 public:
  KeyWriter(std::string& key, size_t most) : key_(key) {
    key_.clear();
    key_.resize(most);
  }
  ~KeyWriter() { key_.resize(n_); }
  KeyWriter(const KeyWriter&) = delete;
  KeyWriter& operator=(const KeyWriter&) = delete;
  void byte(char c) { key_[n_++] = c; }
  void bytes(const void* p, size_t n) {
    std::memcpy(&key_[n_], p, n);
    n_ += n;
  }
  template <typename T>
  void value(const T& v) {
    bytes(&v, sizeof v);
  }
  void string(const std::string& s) {  // with its length: a key of several strings has one reading
    value(s.size());
    bytes(s.data(), s.size());
  }

 private:
  std::string& key_;
  size_t n_ = 0;
};

// The key of a launch's executor: program, kernel and argument signature (each buffer's size and access, each
// scalar's size), not the launch shape: one executor is rebound to each shape. Bytes, as the class key (class_key):
// the strings with their lengths, the argument count, then each argument's tag and size.
std::string launch_key(const LaunchPlan& plan, cl_uint work_dim) {
  std::string key;
  const size_t args = plan.args.size();
  {
    KeyWriter w(key, sizeof plan.source_hash + 3 * sizeof(size_t) + plan.options.size() + plan.kernel_name.size() + 1 +
                         args * (2 + sizeof(size_t)));
    w.value(plan.source_hash);
    w.string(plan.options);
    w.string(plan.kernel_name);
    w.byte(char(work_dim));
    w.value(args);
    for (size_t i = 0; i < args; ++i) {
      const ArgInfo& a = plan.args[i];
      if (a.kind == ArgInfo::Kind::mem) {
        w.byte('b');
        w.value(plan.buffers[i].size);
        w.byte(char(access_of(plan.buffers[i].flags)));
      } else {
        w.byte(a.kind == ArgInfo::Kind::local ? 'l' : 's');
        w.value(a.size);
      }
    }
  }  // the key cut to what was written
  return key;
}

// The launch as a spec (buffers of bytes, scalars of their size) and the key of its executor (launch_key).
Spec launch_spec(const LaunchPlan& plan, cl_uint work_dim, const size_t* global, const size_t* local,
                 std::string& key) {
  Spec spec;
  spec.name = plan.kernel_name;
  spec.kernel_name = plan.kernel_name;
  spec.build_options = plan.options;
  spec.typed_scalars = false;  // the application's bytes; their size is all the launch says
  spec.global.assign(global, global + work_dim);
  if (local) spec.local.assign(local, local + work_dim);
  key = launch_key(plan, work_dim);
  for (size_t i = 0; i < plan.args.size(); ++i) {
    const ArgInfo& a = plan.args[i];
    ArgSpec as;
    as.name = "arg" + std::to_string(i);
    if (a.kind == ArgInfo::Kind::mem) {
      as.kind = ArgKind::buffer;
      as.type = ElemType::u8;  // byte granularity: the copy-mode merge never mixes two devices' writes
      as.count = plan.buffers[i].size;
      as.access = access_of(plan.buffers[i].flags);
    } else if (a.kind == ArgInfo::Kind::local) {
      as.kind = ArgKind::local;  // its bytes per work-group, as the application gave them
      as.type = ElemType::u8;
      as.count = a.size;
    } else {
      as.kind = ArgKind::scalar;
      as.type = scalar_type(a.size);
    }
    spec.args.push_back(as);
  }
  return spec;
}

// The integer scalar arguments by name, for the model's size expressions: signed where the kernel declares them so
// (declared_type), unsigned values of their size otherwise.
pred::ArgValues scalar_values(const Spec& spec, const LaunchPlan& plan) {
  pred::ArgValues v;
  for (size_t i = 0; i < spec.args.size() && i < plan.args.size(); ++i) {
    const auto& b = plan.args[i].bytes;
    if (spec.args[i].kind != ArgKind::scalar || b.empty() || b.size() > 8) continue;
    uint64_t x = 0;
    std::memcpy(&x, b.data(), b.size());  // little-endian hosts
    const bool is_signed = type_name(spec.args[i].type)[0] != 'u' && !is_float(spec.args[i].type);
    if (is_signed && b.size() < 8 && (x >> (8 * b.size() - 1) & 1)) x |= ~uint64_t(0) << (8 * b.size());
    v[spec.args[i].name] = int64_t(x);
  }
  return v;
}

// The launch's entry, made at the first launch of its key (decide() has initialised dop and looked for an earlier
// failure of the key): what the kernel's forms say (argument names and declared scalar types, footprint, malleable
// form) and under auto its model. No executor: make_executor makes it when a launch needs it. Called with the guard
// set.
std::shared_ptr<DopState::Entry> entry_for(DopState& s, const LaunchPlan& plan, Spec spec, const std::string& key) {
  // Under auto, the model first, without the lock: the first class to ask reads it (model()).
  std::shared_ptr<const pred::Predictor> predictor;
  std::string model_error;
  if (s.auto_config) {
    try {
      predictor = model(s);
    } catch (const std::exception& e) {
      model_error = e.what();
    }
  }
  std::lock_guard<std::mutex> l(s.m);
  auto& e = s.executors[key];
  if (e) return e;
  const auto resolved =
      dop_intercept::resolve_forms(*s.forms, {*plan.source, plan.kernel_name, plan.options, {}}, log_line);
  const KernelForms& forms = *resolved;
  // The kernel's argument names (its footprint and the model's size expressions use them) and its scalars' types.
  if (forms.arg_names.size() == spec.args.size())
    for (size_t i = 0; i < forms.arg_names.size(); ++i) spec.args[i].name = forms.arg_names[i];
  if (forms.arg_types.size() == spec.args.size())
    for (size_t i = 0; i < spec.args.size(); ++i)
      if (spec.args[i].kind == ArgKind::scalar)
        spec.args[i].type = declared_type(forms.arg_types[i], spec.args[i].type);
  auto fresh = std::make_shared<DopState::Entry>();
  fresh->options.memory = s.memory;
  if (s.auto_config && !predictor) {
    fresh->no_model = "DOP_CONFIG=auto: DOP_MODEL: " + model_error;
  } else if (s.auto_config && !forms.code && !predictor->model().code_keys().empty()) {
    fresh->no_model = "DOP_CONFIG=auto: " + forms.no_code;  // a model that reads no code features needs none
  } else if (s.auto_config) {
    AutoModel m;
    m.predictor = std::move(predictor);
    m.kernel_id = forms.origin + ":" + plan.kernel_name;
    fresh->options.model = std::move(m);
  }
  apply_forms(forms, fresh->options);  // the footprint and the model's code features too
  fresh->spec = std::move(spec);
  e = std::move(fresh);
  return e;
}

// The launch's class key (t.m held), into `key`: what its decision is kept for. The argument signature (each
// argument's kind; a buffer's size and flags; a scalar's size), the work dimensions, the work-items to the power of
// two below (so that an NDRange that shrinks step by step meets its class again), the local size as given, and for
// the scalars the model's size expressions read (KernelInfo::class_scalars) their values' power of two. Not the
// exact NDRange, not the buffers' identities, not other scalar values: a step counter or a shrinking NDRange is one
// class. The kernel (with its program, source and build options) is the memo's key.
void class_key(const Tables& t, const KernelInfo& k, cl_uint work_dim, const size_t* global, const size_t* local,
               std::string& key) {
  KeyWriter w(key, 3 + work_dim * sizeof(size_t) + k.args.size() * (2 + sizeof(size_t) + sizeof(cl_mem_flags)));
  w.byte(char(work_dim));
  w.byte(char(items_class(work_dim, global)));
  if (local)
    w.bytes(local, work_dim * sizeof(size_t));
  else
    w.byte('a');
  for (size_t i = 0; i < k.args.size(); ++i) {
    const ArgInfo& a = k.args[i];
    w.byte(char(a.kind));
    if (a.kind == ArgInfo::Kind::mem) {
      auto b = t.buffers.find(a.mem);
      if (b == t.buffers.end()) {
        w.byte('?');
        continue;
      }
      w.value(b->second.size);
      w.value(b->second.flags);
    } else if (a.kind == ArgInfo::Kind::local) {
      w.value(a.size);
    } else if (a.kind == ArgInfo::Kind::scalar) {
      w.value(a.size);
      if (i < 64 && (k.class_scalars >> i & 1) && a.bytes.size() <= 8)
        w.byte(char(scalar_class(a.bytes.data(), a.bytes.size())));
    }
  }
}

// Bit i: scalar argument i of `args`, as they are set, is among the kernel's model arguments (model_arg_names).
uint64_t model_scalars(uint64_t model_args, const std::vector<ArgInfo>& args) {
  uint64_t bits = 0;
  for (size_t i = 0; i < args.size() && i < 64; ++i)
    if (args[i].kind == ArgInfo::Kind::scalar) bits |= model_args & uint64_t(1) << i;
  return bits;
}

// The launch's class key (launch_class) into `ckey`, with the kernel's model scalars found at its first launch under
// auto: from what its program's build found (KernelInfo::model_args), else from its forms (resolved outside the
// tables' lock). Called with the guard set.
std::string launch_class(DopState& s, cl_kernel kernel, const LaunchPlan& plan, cl_uint work_dim, const size_t* global,
                         const size_t* local, std::string& ckey) {
  auto& t = tables();
  std::optional<uint64_t> model_args;  // the kernel's first decision under auto: what its build found
  {
    auto l = lock_tables(t);
    auto k = t.kernels.find(kernel);
    if (k == t.kernels.end()) return "kernel no longer known";
    if (!s.auto_config || k->second.class_scalars_known) {
      class_key(t, k->second, work_dim, global, local, ckey);
      return {};
    }
    if (k->second.model_args_known) model_args = k->second.model_args;
  }
  if (!model_args) {
    const auto forms =
        dop_intercept::resolve_forms(*s.forms, {*plan.source, plan.kernel_name, plan.options, {}}, log_line);
    model_args = forms->arg_names.size() == plan.args.size() ? model_arg_names(*forms) : 0;
  }
  auto l = lock_tables(t);
  auto k = t.kernels.find(kernel);
  if (k == t.kernels.end()) return "kernel no longer known";
  if (!k->second.class_scalars_known) {
    k->second.class_scalars = model_scalars(*model_args, plan.args);
    k->second.class_scalars_known = true;
    decision_inputs_changed();
  }
  class_key(t, k->second, work_dim, global, local, ckey);
  return {};
}

// The times of the launch class `ckey` of the executor key `key`, made at the class's first launch. Called with s.m
// held.
DopState::Measured& measured_of(DopState& s, const std::string& key, const std::string& ckey) {
  std::string& both = launch_scratch().measured_key;
  both.assign(key).append(ckey);
  return s.measured[both];
}

// The launch classes of `kernel` (named `name`), made at its first decision with room for the dozens of classes of a
// factorisation's kernel: a class's first launch does not rehash them (which touches every class). Called with s.m
// held.
DopState::KernelMemo& kernel_memo(DopState& s, cl_kernel kernel, const std::string& name) {
  auto [memo, made] = s.memo.try_emplace(kernel);
  if (made) memo->second.classes.reserve(64);
  memo->second.name = name;
  return memo->second;
}

// The share of a class's exploration budget after which the model is read (start_model_reading), so that it is read
// when the class asks it (a 0.6 MB gbt takes 30-60 ms to read).
constexpr double kModelReadingShare = 0.25;

// Whether the class's launches on the application's device may have taken `share` of the exploration budget
// (explore_ms) by its next launch, at `now`: their time so far is at most the wall time since the class's first
// launch (none before it), and once a launch was timed, their number times its time (a timed launch waits for the
// queue to drain: a stream of tiny launches takes far less each than the wall time says). Called with s.m held.
bool exploration_budget_spent(const DopState& s, const DopState::Measured& m, Clock::time_point now, double share = 1) {
  const double wall = m.launches == 0 ? 0 : ms_between(m.first, now);
  const double so_far = m.native_n == 0 ? wall : std::min(double(m.launches) * m.native_ms, wall);
  return so_far >= share * s.explore_ms;
}

// Whether a class not asked yet asks the model at its launch at `now`: its budget is spent, and the model is read
// (model_askable) or the class has run natively for another budget's length meanwhile. A reading thread starved by an
// application that keeps every core busy (it runs at nice 19) is then waited for: the deferral is bounded. Called
// with s.m held.
bool ask_model_now(const DopState& s, const DopState::Measured& m, Clock::time_point now) {
  return exploration_budget_spent(s, m, now) && (model_askable(s) || exploration_budget_spent(s, m, now, 2));
}

// Counts a launch of the class (at `now`) for exploration_budget_spent. Called with s.m held.
int count_launch(DopState::Measured& m, Clock::time_point now) {
  if (m.launches == 0) m.first = now;
  return m.launches++;
}

// The model chose something other than the application's own device: the choice is checked by measurement, per
// launch class (launch_class). A class starts on the application's device in whole, as the application asked,
// untimed. Trying the model's choice costs a launch or more of fetching, building and flushing, so it is tried only
// once the class's launches may have taken explore_ms on the application's device (exploration_budget_spent): then
// one launch of the application's device is timed (by finishing the queue before and after it: a timed launch
// stalls the application's pipeline, so a short run pays none), then the model's choice, and each launch runs the
// faster way last measured; the slower is timed again after 16, 32, 64, ... launches while it is within 1.5x of the
// faster, and never again otherwise. DOP_AUTO_FIRST=model starts a class with the model's choice instead.
// A class fed from the host (Decision::host_fed) is timed over the step (from the application's first write of its
// inputs). dop's way must find the inputs in dop's copies to be timed for what it costs: the launch on the
// application's device timed before the model's first try makes the class's buffers take the application's writes
// from then on (prepare_for_dop); a later try after launches on the application's device (whose writes went to its own
// buffers) runs untimed once to warm up, and is timed at the class's next launch.
// Called with s.m held.
void check_against_native(DopState& s, Decision& d, const Config& native_config) {
  DopState::Measured& m = *d.measured;
  const auto now = budget_now();
  const bool budget_spent = exploration_budget_spent(s, m, now);
  const int launch = count_launch(m, now);
  bool native;
  if (m.time_dop_next) {  // dop's way warmed up at the class's last launch
    m.time_dop_next = false;
    native = false;
    d.timed = true;
  } else if (m.dop_n == 0 && s.native_first) {
    d.timed = budget_spent;  // the application's device once, then the model's choice
    native = !budget_spent || m.native_n == 0;
    // Host-fed: the writes before the model's first try go to dop's copies already (prepare_for_dop).
    if (budget_spent && native && d.host_fed) d.prepare_dop = m.prepared = true;
  } else if (m.native_n == 0 && m.dop_n == 0) {
    native = false;  // DOP_AUTO_FIRST=model
    d.timed = true;
  } else if (m.native_n == 0) {
    native = d.timed = true;
  } else {
    const bool native_wins = m.native_ms <= m.dop_ms;
    const double ratio = native_wins ? m.dop_ms / std::max(m.native_ms, 1e-6) : m.native_ms / std::max(m.dop_ms, 1e-6);
    d.timed = launch >= m.next_check && ratio < 1.5;  // the slower way, timed again
    if (d.timed) m.next_check = launch + (m.interval *= 2);
    native = native_wins != d.timed;
  }
  const bool warm_up = !native && d.timed && d.host_fed && m.last_native && !m.prepared;
  if (!native) m.prepared = false;
  if (warm_up) {
    d.timed = false;
    m.time_dop_next = true;
  }
  m.last_native = native;
  d.native = native;
  if (native) d.config = native_config;
  d.way = warm_up ? "warm-up" : m.native_n > 0 && m.dop_n > 0 ? "measured" : native ? "native" : "model";
}

// The configuration that is the device `dev` in whole, when it is one of dop's devices.
std::optional<Config> own_device_config(const DopState& s, cl_device_id dev) {
  if (s.sel.gpu && dev == s.sel.gpu->device) return Config{0, 1};
  if (s.sel.cpu && dev == s.sel.cpu->device) return Config{1, 0};
  return std::nullopt;
}

// What the decided configuration means for this launch on the device `dev` of its queue: the application's device
// in whole (native), or under auto a choice to check against it by measurement. Called with s.m held.
void route(DopState& s, cl_device_id dev, Decision& d) {
  d.native = native_route(d.config, dev, s.sel);
  if (!d.automatic) return;
  const std::optional<Config> own = own_device_config(s, dev);
  if (!d.native && own && s.check_auto) check_against_native(s, d, *own);
}

// Under auto with the measured check, where a class starts on the application's device (one of dop's): whatever the
// model would choose, the class's launches run natively, untimed, until its exploration budget is spent
// (check_against_native), so the model is asked only then (decide()), and the executor made only for a dop launch:
// a class that never runs long enough costs its launches nothing but the memo's lookup.
bool model_deferred(const DopState& s, cl_device_id dev) {
  return s.auto_config && s.check_auto && s.native_first && own_device_config(s, dev);
}

// A launch of a class whose model is not asked yet (model_deferred, its budget not spent), counted for the budget at
// `now`. Past a quarter of the budget the model is read meanwhile, so that it is ready when the class asks it. Called
// with s.m held.
void count_before_model(DopState& s, const DopState::ClassMemo& c, Clock::time_point now) {
  if (exploration_budget_spent(s, *c.measured, now, kModelReadingShare)) start_model_reading(s);
  count_launch(*c.measured, now);
}

// Such a launch decided: on the application's device (`own`), untimed. Called with s.m held.
void run_before_model(DopState& s, const DopState::ClassMemo& c, const Config& own, Clock::time_point now,
                      Decision& d) {
  count_before_model(s, c, now);
  d.config = own;
  d.native = true;
  d.measured = c.measured;
  d.way = "native";
  d.model = "later";
}

// A class whose executor key failed (s.failed): remembered as falling back, so that its next launches go to the
// application's enqueue from the memo (decide_known_class) instead of being decided again to find the failure: a
// kernel with no forms under auto (a runtime-only machine without its bundle) costs its launches a lookup, not a
// decision. Called with s.m held.
void remember_fallback(DopState& s, cl_kernel kernel, const std::string& name, const std::string& ckey,
                       const std::string& key) {
  DopState::KernelMemo& memo = kernel_memo(s, kernel, name);
  auto it = memo.classes.try_emplace(ckey).first;
  memo.last = &*it;
  DopState::ClassMemo& c = it->second;
  if (c.fallback) return;  // with dop's log, its launches come here to say why
  c = DopState::ClassMemo{{}, {}, {}, {}, 0, &measured_of(s, key, ckey), false};
  c.fallback = true;
  decision_inputs_changed();  // its launches repeated from a cache (pending ones) are not what they were
}

// Where a launch's data is, for the model (pred::LaunchShape::data_on_gpu, the dataset's data_on): on the GPU when
// the application's queue is on dop's GPU and its buffers there are current (dop holds none of their latest bytes),
// as in an application that keeps its data on the GPU between launches; else in host memory, where dop's copies and
// a CPU device's buffers are. Part of the launch class: the same kernel decides anew when its data moves. A dop
// launch's CPU part runs on dop's host copies (residency.hpp), its GPU part on the application's buffers where the
// queue is on dop's GPU (dop_route.cpp); where moving the data makes the model's choice slower than the
// application's device, the measured check (check_against_native) finds it. A launch whose buffers the application
// has just written from host memory (at least half of their bytes since a kernel last used them: an application that
// feeds every step from the host) has its data in host memory, whatever its buffers hold by then: each step's data
// crosses from the host, and where it goes is what is decided (once dop's way has run, dop's copies take the
// application's writes: absorb_write in residency.hpp). Sets d.host_fed.
bool data_on_gpu(const DopState& s, cl_device_id dev, const KernelBuffers& kb, Decision& d) {
  d.host_fed = kb.fed_bytes > 0 && 2 * kb.fed_bytes >= kb.bytes;
  if (d.host_fed) d.fed_since = kb.fed_since;
  return !d.host_fed && s.sel.gpu && dev == s.sel.gpu->device && app_copies_current(kb);
}

// A launch decided by its class's memo (s.m held). What only a dop launch needs (its executor, spec and key) is
// taken only for one.
void take_class(DopState& s, const DopState::ClassMemo& c, cl_device_id dev, Decision& d) {
  d.config = d.automatic ? c.model_config : s.config;
  d.decide_us = c.decide_us;
  d.measured = c.measured;
  route(s, dev, d);
  if (d.native) return;
  d.entry = c.entry;
  d.spec = c.spec;
  d.key = c.key;
}

// ---------------------------------------------------------------------------------------------------------------
// Launches repeated natively from the thread's cache (native_again)
// ---------------------------------------------------------------------------------------------------------------

// A launch class that decide_known_class found to run on the application's device, for one kernel on this thread:
// settled there (the model chose it and nothing checks it), or running there until its model is asked (pending). What
// its key was made of is kept as it came in (the shape) or as a count of the changes to the rest (decision_epoch).
struct NativeRepeat {
  cl_kernel kernel = nullptr;
  uint64_t epoch = 0;                // decision_epoch() before the tables were read
  cl_command_queue queue = nullptr;  // the launch's, on `dev` (a queue released changes the epoch)
  cl_device_id dev = nullptr;
  cl_uint work_dim = 0;
  int items = 0;  // the power of two of the work-items (items_class)
  bool open_local = true;
  size_t local[3] = {};
  const DopState::ClassMemo* cls = nullptr;  // a node of the kernel's memo: erased only with a change of the epoch
  bool pending = false;
  // A pending class's launches before `counted_until` are counted here (`uncounted`), without dop's lock, and added
  // to the class's count by the next launch that takes it: the one at or after `counted_until` (when the class may
  // have spent a share of its budget that matters, below) or the kUncounted-th. Only while no launch of the class
  // was timed: its budget is then the wall time since its first launch, which the count does not move.
  Clock::time_point counted_until{};
  int uncounted = 0;

  // The shape part of the class key (class_key): work dimensions, the power of two of the work-items, the local size.
  bool same_shape(cl_uint dims, const size_t* global, const size_t* loc) const {
    if (dims != work_dim || !global || open_local != !loc || items_class(dims, global) != items) return false;
    for (cl_uint d = 0; loc && d < dims; ++d)
      if (loc[d] != local[d]) return false;
    return true;
  }
};

// A few kernels per thread (an application's step launches a handful): the one of the kernel, else the oldest goes.
constexpr size_t kRepeats = 8;
thread_local NativeRepeat t_repeats[kRepeats];
thread_local size_t t_repeats_next = 0;

NativeRepeat* repeat_of(cl_kernel kernel) {
  for (NativeRepeat& r : t_repeats)
    if (r.kernel == kernel) return &r;
  return nullptr;
}

// Until when a pending class's launches need no check of its budget (NativeRepeat::counted_until): the first share of
// its budget that matters and is not spent by `now` (the quarter that starts the model's reading, then the whole),
// from the class's first launch; `now` where a launch was timed (every launch is then counted under dop's lock).
// Called with s.m held.
Clock::time_point counted_until(const DopState& s, const DopState::Measured& m, Clock::time_point now) {
  if (m.native_n != 0 || m.launches == 0) return now;
  for (double share : {kModelReadingShare, 1.0}) {
    const auto until = m.first + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double, std::milli>(share * s.explore_ms));
    if (until > now) return until;
  }
  return now;
}

void remember_native(cl_kernel kernel, uint64_t epoch, cl_command_queue queue, cl_device_id dev, cl_uint work_dim,
                     const size_t* global, const size_t* local, const DopState::ClassMemo& c,
                     Clock::time_point counted) {
  NativeRepeat* r = repeat_of(kernel);
  if (!r) r = &t_repeats[t_repeats_next++ % kRepeats];
  *r =
      NativeRepeat{kernel, epoch, queue, dev, work_dim, items_class(work_dim, global), !local, {}, &c, c.model_pending};
  r->counted_until = counted;
  if (local) std::copy(local, local + work_dim, r->local);
}

// The most launches a thread counts for a pending class before it adds them to the class's count.
constexpr int kUncounted = 256;

// What decide_known_class would find for a launch that `r` repeats: "" when it is r's class, decided as r says, with
// no host writes to spend; else what differs. Takes both locks; for checking_repeats only.
std::string repeat_mismatch(const NativeRepeat& r, cl_kernel kernel, cl_uint work_dim, const size_t* global,
                            const size_t* local, std::string& name) {
  DopState& s = dop_state();
  std::string key;
  KernelBuffers kb;
  {
    auto& t = tables();
    auto l = lock_tables(t);
    auto k = t.kernels.find(kernel);
    if (k == t.kernels.end()) return "the kernel is not in the tables";
    name = k->second.name;
    class_key(t, k->second, work_dim, global, local, key);
    kernel_buffers(t, k->second, kb);
  }
  if (kb.fed_bytes > 0) return "host writes to its buffers not spent";
  Decision d;
  key += data_on_gpu(s, r.dev, kb, d) ? 'g' : 'h';
  std::lock_guard<std::mutex> l(s.m);
  auto m = s.memo.find(kernel);
  if (m == s.memo.end()) return "no launch classes";
  auto c = m->second.classes.find(key);
  if (c == m->second.classes.end() || &c->second != r.cls) return "another launch class";
  if (c->second.model_pending != r.pending) return "the class was decided";
  if (!r.pending && !c->second.fallback && !native_route(c->second.model_config, r.dev, s.sel))
    return "not the application's device";
  if (c->second.entry && c->second.entry->failed) return "the class failed";
  return {};
}

}  // namespace

bool checking_repeats() {
  static const bool on = [] {
    const char* v = std::getenv("DOP_TEST_CHECK_REPEATS");
    return v && std::strcmp(v, "1") == 0;
  }();
  return on;
}

uint64_t model_arg_names(const KernelForms& forms) {
  uint64_t bits = 0;
  if (!forms.code) return bits;
  for (const auto& [feature, expr] : forms.code->exprs)
    for (size_t p = 0; p < expr.size();) {
      if (!(std::isalpha(static_cast<unsigned char>(expr[p])) || expr[p] == '_')) {
        ++p;
        continue;
      }
      size_t e = p;
      while (e < expr.size() && (std::isalnum(static_cast<unsigned char>(expr[e])) || expr[e] == '_')) ++e;
      const std::string_view name(expr.data() + p, e - p);
      for (size_t i = 0; i < forms.arg_names.size() && i < 64; ++i)
        if (forms.arg_names[i] == name) bits |= uint64_t(1) << i;
      p = e;
    }
  return bits;
}

void remember_failure(DopState& s, DopState::Entry& entry, const std::string& key, const std::string& why) {
  std::lock_guard<std::mutex> l(s.m);
  s.failed[key] = why;
  entry.failed = true;
  decision_inputs_changed();  // the classes of the entry fall back from now on
}

void make_executor(DopState& s, DopState::Entry& entry, const Spec& spec, const std::string& source,
                   const std::string& key) {
  if (entry.exec) return;
  try {
    auto exec = std::make_unique<Executor>(spec, source, s.sel, entry.options);
    std::vector<ArgData> args;
    if (s.memory == MemoryMode::svm) {
      args = exec->make_args();  // buffers in the executor's SVM: dop's host copies are copied in
    } else {
      const Spec& es = exec->spec();
      args.resize(es.args.size());
      for (size_t i = 0; i < es.args.size(); ++i) {
        args[i].spec = &es.args[i];
        // A scalar's storage (guarded host memory: a page and its guard region) is made at its first dop launch
        // (set_scalars): a launch that runs natively needs none.
        if (es.args[i].kind == ArgKind::scalar) args[i].bytes = type_size(es.args[i].type);
      }
    }
    entry.exec = std::move(exec);
    entry.args = std::move(args);
  } catch (const std::exception& e) {
    remember_failure(s, entry, key, e.what());
    throw;
  }
}

std::string plan_launch(cl_kernel kernel, cl_uint work_dim, const size_t* offset, const size_t* global,
                        const size_t* local, LaunchPlan& plan, bool& tracked, KernelBuffers* kb) {
  auto& t = tables();
  auto l = lock_tables(t);
  auto kit = t.kernels.find(kernel);
  tracked = kit != t.kernels.end();
  if (!tracked) return "kernel not created through clCreateKernel/clCreateKernelsInProgram";
  const KernelInfo& k = kit->second;
  if (kb) kernel_buffers(t, k, *kb);
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
  plan.buffers.assign(k.args.size(), LaunchPlan::Buffer{});
  for (size_t i = 0; i < k.args.size(); ++i) {
    const ArgInfo& a = k.args[i];
    auto at = [i] { return "argument " + std::to_string(i) + ": "; };  // only for a reason: no string per launch
    if (!k.type_names.empty()) {
      const std::string& tn = k.type_names[i];
      for (const char* bad : {"image", "sampler", "pipe", "queue_t", "event_t"})
        if (tn.find(bad) != std::string::npos) return at() + tn;
    }
    switch (a.kind) {
      case ArgInfo::Kind::unset:
        return at() + "not set";
      case ArgInfo::Kind::local:
        // __local memory of a.size bytes per work-group, or (where the implementation reports the kernel's address
        // qualifiers) a NULL buffer. Where it does not, dop's kernels get the same NULL value of the same size,
        // which means the same to the kernel either way, and dop's own build (with its argument info) checks it.
        if (!k.quals.empty() && k.quals[i] != CL_KERNEL_ARG_ADDRESS_LOCAL) return at() + "a NULL buffer";
        break;
      case ArgInfo::Kind::unsupported:
        return at() + a.why;
      case ArgInfo::Kind::mem: {
        auto bit = t.buffers.find(a.mem);
        if (bit == t.buffers.end()) return at() + "buffer no longer known";
        plan.buffers[i] = {bit->second.size, bit->second.flags};
        if (!k.quals.empty() && k.quals[i] != CL_KERNEL_ARG_ADDRESS_GLOBAL &&
            k.quals[i] != CL_KERNEL_ARG_ADDRESS_CONSTANT)
          return at() + "buffer given for a non-pointer argument";
        const cl_mem_flags f = bit->second.flags;
        if (f & CL_MEM_HOST_NO_ACCESS) return at() + "buffer with CL_MEM_HOST_NO_ACCESS";
        if (f & CL_MEM_HOST_WRITE_ONLY) return at() + "buffer with CL_MEM_HOST_WRITE_ONLY";
        if ((f & CL_MEM_HOST_READ_ONLY) && !(f & CL_MEM_READ_ONLY))
          return at() + "writable buffer with CL_MEM_HOST_READ_ONLY";
        break;
      }
      case ArgInfo::Kind::scalar:
        if (!k.quals.empty() && k.quals[i] != CL_KERNEL_ARG_ADDRESS_PRIVATE)
          return at() + "pointer argument given a value that is not a known buffer";
        if (a.size != 1 && a.size != 2 && a.size != 4 && a.size != 8)
          return at() + "scalar of " + std::to_string(a.size) + " bytes (vectors and structs are not supported)";
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

std::string decide(cl_command_queue queue, cl_kernel kernel, const LaunchPlan& plan, cl_uint work_dim,
                   const size_t* global, const size_t* local, const KernelBuffers& kb, const std::string& not_runnable,
                   const std::string* class_key, Decision& d) {
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
  const cl_device_id dev = queue_device(queue);
  std::string& ckey = launch_scratch().new_class_key;
  if (class_key)
    ckey = *class_key;
  else if (const std::string gone = launch_class(s, kernel, plan, work_dim, global, local, ckey); !gone.empty())
    return gone;
  d.data_on_gpu = d.automatic && data_on_gpu(s, dev, kb, d);
  ckey += d.data_on_gpu ? 'g' : 'h';
  d.key = launch_key(plan, work_dim);
  {
    std::lock_guard<std::mutex> l(s.m);
    auto f = s.failed.find(d.key);
    if (f != s.failed.end()) {
      remember_fallback(s, kernel, plan.kernel_name, ckey, d.key);
      return "failed before: " + f->second;
    }
    if (model_deferred(s, dev)) {
      // The class runs natively until its budget is spent, without its entry or spec (a class that never runs long
      // enough costs a lookup per launch); its first launch after that asks the model, once the model is read
      // (ask_model_now: until then, for at most another budget, the class goes on as before).
      const auto now = budget_now();
      DopState::Measured& m = measured_of(s, d.key, ckey);
      DopState::KernelMemo& memo = kernel_memo(s, kernel, plan.kernel_name);
      auto c = memo.classes.find(ckey);
      const bool pending = c == memo.classes.end() || c->second.model_pending;
      if (pending && !ask_model_now(s, m, now)) {
        d.known_class = c != memo.classes.end();
        if (!d.known_class) c = memo.classes.emplace(ckey, DopState::ClassMemo{{}, {}, {}, {}, 0, &m, true}).first;
        memo.last = &*c;
        run_before_model(s, c->second, *own_device_config(s, dev), now, d);
        // Its next launches may repeat it (native_again), as those of a known class decide_known_class found: from
        // its second launch on, rather than its third (lu's NDRange meets a new power of two every few launches).
        // The epoch is the one read before the tables gave the class key; without that key (a kernel's first
        // decision), not.
        if (class_key && !any_buffer_state() && kb.fed_bytes == 0)
          remember_native(kernel, launch_scratch().class_key_epoch, queue, dev, work_dim, global, local, c->second,
                          counted_until(s, m, now));
        return {};
      }
      if (c != memo.classes.end() && c->second.model_pending) d.model = "asked", d.known_class = true;
    }
  }
  auto spec = std::make_shared<Spec>(launch_spec(plan, work_dim, global, local, d.key));
  d.entry = entry_for(s, plan, *spec, d.key);
  const Spec& es = d.entry->spec;  // the kernel's argument names and scalar types, from its forms (never changed)
  for (size_t i = 0; i < spec->args.size() && i < es.args.size(); ++i) {
    spec->args[i].name = es.args[i].name;
    if (spec->args[i].kind == ArgKind::scalar) spec->args[i].type = es.args[i].type;
  }
  d.spec = spec;
  if (d.automatic) {
    if (!d.entry->options.model) {  // no code features: the launch, and the key's later ones, fall back saying why
      remember_failure(s, *d.entry, d.key, d.entry->no_model);
      throw std::runtime_error(d.entry->no_model);
    }
    // The launch's shape and integer scalars straight to the predictor: the executor is made (or rebound) only if
    // dop runs the launch. A launch that leaves the work-group size open is asked at the size the executor would
    // choose (open_local_size).
    const auto t = Clock::now();
    pred::LaunchShape shape;
    shape.work_dim = work_dim;
    const std::vector<size_t> wg = local ? std::vector<size_t>{} : open_local_size(spec->global);
    for (cl_uint i = 0; i < work_dim; ++i) {
      shape.global[i] = global[i];
      shape.local[i] = local ? local[i] : (i < wg.size() ? wg[i] : 1);
    }
    // The buffers' bytes by their cl_mem flags, and where they are (data_on_gpu, above).
    shape.in_bytes = spec->in_bytes();
    shape.out_bytes = spec->out_bytes();
    shape.data_on_gpu = d.data_on_gpu;
    const AutoModel& model = *d.entry->options.model;
    const pred::Decision pd = model.predictor->decide(model.kernel_id, model.code, shape, scalar_values(*spec, plan));
    d.decide_us = ms_between(t, Clock::now()) * 1e3;
    d.config = pd.config;
  }
  std::lock_guard<std::mutex> l(s.m);
  d.measured = &measured_of(s, d.key, ckey);
  DopState::KernelMemo& memo = kernel_memo(s, kernel, plan.kernel_name);
  auto c = memo.classes.insert_or_assign(  // a class that ran before its model was asked keeps its times (measured)
      ckey, DopState::ClassMemo{d.entry, d.spec, d.key, d.config, d.decide_us, d.measured, false});
  if (!c.second) decision_inputs_changed();  // decided anew: its launches repeated from a cache are not what they were
  memo.last = &*c.first;
  route(s, dev, d);
  return {};
}

bool decide_known_class(cl_command_queue queue, cl_kernel kernel, cl_uint work_dim, const size_t* global,
                        const size_t* local, Decision& d, KernelBuffers& kb, std::string& name, bool& key_made) {
  key_made = false;
  DopState& s = dop_state();
  if (!s.ready.load(std::memory_order_acquire) || !s.init_error.empty()) return false;
  if (work_dim < 1 || work_dim > 3 || !global) return false;
  // Read before the tables: a change after this makes the class remembered below (remember_native) stale.
  const uint64_t epoch = decision_epoch();
  const bool no_states = !any_buffer_state();
  std::string& key = launch_scratch().class_key;
  {
    auto& t = tables();
    auto l = lock_tables(t);
    auto k = t.kernels.find(kernel);
    if (k == t.kernels.end()) return false;
    // Under auto, the kernel's first decision finds the model scalars its class keys need (launch_class): no class of
    // it is known before.
    if (s.auto_config && !k->second.class_scalars_known) return false;
    class_key(t, k->second, work_dim, global, local, key);
    kernel_buffers(t, k->second, kb);
  }
  const cl_device_id dev = queue_device(queue);
  d.data_on_gpu = s.auto_config && data_on_gpu(s, dev, kb, d);  // s read-only once ready
  key += d.data_on_gpu ? 'g' : 'h';
  // A launch for decide(), given the class key less where the data is (decide() finds that again, with what it sets of
  // the launch).
  auto to_decide = [&] {
    key.pop_back();
    key_made = true;
    launch_scratch().class_key_epoch = epoch;
    return false;
  };
  {
    std::lock_guard<std::mutex> l(s.m);
    auto m = s.memo.find(kernel);
    if (m == s.memo.end()) return to_decide();
    DopState::KernelMemo& memo = m->second;
    if (!memo.last || memo.last->first != key) {
      auto c = memo.classes.find(key);
      if (c == memo.classes.end()) return to_decide();
      memo.last = &*c;
    }
    const DopState::ClassMemo& c = memo.last->second;
    if (c.entry && c.entry->failed) return to_decide();  // decide() says why (a pending class has no entry)
    if (c.fallback) {
      if (log_enabled() && !checking_repeats()) return to_decide();  // decide() logs why it falls back
      d.native = true;  // as the fallback runs: the application's enqueue, after dop's results its buffers lack
      d.known_class = true;
      d.automatic = s.auto_config;
      d.config = own_device_config(s, dev).value_or(s.config);
      d.way = "fallback";
      if (log_enabled()) name = memo.name;
      if (no_states && kb.fed_bytes == 0)
        remember_native(kernel, epoch, queue, dev, work_dim, global, local, c, Clock::time_point{});
      return true;
    }
    if (c.model_pending) {
      // decide() asks the model once the budget is spent (or for a queue on another device than dop's).
      const auto now = budget_now();
      if (!model_deferred(s, dev) || ask_model_now(s, *c.measured, now)) return to_decide();
      d.automatic = true;
      run_before_model(s, c, *own_device_config(s, dev), now, d);
    } else {
      d.automatic = s.auto_config;
      take_class(s, c, dev, d);
    }
    d.known_class = true;
    // A class on the application's device, untimed (the model chose it, or is not asked yet), whose launch has nothing
    // of dop's to flush (no buffer states) and no host writes to spend: its next launches may repeat it (native_again).
    const bool settled = d.automatic && !c.model_pending && native_route(c.model_config, dev, s.sel);
    if (no_states && kb.fed_bytes == 0 && (c.model_pending || settled))
      remember_native(kernel, epoch, queue, dev, work_dim, global, local, c,
                      c.model_pending ? counted_until(s, *c.measured, budget_now()) : Clock::time_point{});
    if (log_enabled()) name = memo.name;
  }
  return true;
}

bool native_again(cl_command_queue queue, cl_kernel kernel, cl_uint work_dim, const size_t* global,
                  const size_t* local) {
  // What decide_known_class reads, each checked for a change since it remembered the class: the kernel's arguments,
  // the buffers and the launch classes (decision_epoch), the shape and the queue's device (the rest of the key), host
  // writes (their data would be host-fed, and a launch spends them) and buffer states (data_on_gpu, and the flushes
  // of dop's results before a native kernel: none while dop has never run with a buffer).
  const bool checking = checking_repeats();
  if ((log_enabled() && !checking) || any_buffer_state() || host_writes_pending()) return false;
  NativeRepeat* r = repeat_of(kernel);
  if (!r || r->epoch != decision_epoch() || !r->same_shape(work_dim, global, local)) return false;
  if (queue != r->queue && queue_device(queue) != r->dev) return false;  // another queue on another device
  if (!r->pending && !checking) return true;                             // settled: nothing to count
  try {
    Inside guard;
    if (r->pending) {  // not asked yet: counted for the class's budget; the launch that spends it goes to decide()
      const auto now = budget_now();
      if (!checking && now < r->counted_until && r->uncounted < kUncounted) {
        ++r->uncounted;  // no share of the budget that matters can be spent before counted_until
        return true;
      }
      DopState& s = dop_state();
      std::lock_guard<std::mutex> l(s.m);
      if (r->epoch != decision_epoch()) return false;  // decided or forgotten meanwhile: r->cls may be gone
      DopState::Measured& m = *r->cls->measured;
      m.launches += std::exchange(r->uncounted, 0);
      if (ask_model_now(s, m, now)) return false;
      count_before_model(s, *r->cls, now);
      r->counted_until = counted_until(s, m, now);
    }
    if (checking) {
      std::string name;
      const std::string why = repeat_mismatch(*r, kernel, work_dim, global, local, name);
      if (!why.empty())
        std::fprintf(stderr, "dop-intercept: repeat mismatch: kernel=%s: %s\n", name.c_str(), why.c_str());
      log_line("repeat=native kernel=" + name + " global=" + dims(work_dim, global) +
               (r->pending ? " model=later" : ""));
    }
    return true;
  } catch (...) {
    return false;
  }
}

void shape_spec(cl_kernel kernel, cl_uint work_dim, const size_t* global, const size_t* local, Decision& d) {
  const size_t local_n = local ? work_dim : 0;
  auto same = [](const std::vector<size_t>& v, const size_t* p, size_t n) {
    return v.size() == n && std::equal(p, p + n, v.begin());
  };
  if (same(d.spec->global, global, work_dim) && same(d.spec->local, local, local_n)) return;  // no allocation
  auto next = std::make_shared<Spec>(*d.spec);
  next->global.assign(global, global + work_dim);
  next->local.assign(local, local + local_n);
  d.spec = next;
  DopState& s = dop_state();
  std::lock_guard<std::mutex> lock(s.m);
  auto m = s.memo.find(kernel);
  if (m != s.memo.end() && m->second.last && m->second.last->second.entry == d.entry)
    m->second.last->second.spec = d.spec;  // the next launch of this shape: kept
}

void forget_launch_classes(cl_kernel k) {
  DopState& s = dop_state();
  std::lock_guard<std::mutex> l(s.m);
  s.memo.erase(k);
  decision_inputs_changed();  // under s.m: native_again reads a pending class only after checking it
}

void record_time(DopState& s, const Decision& d) {
  if (!d.timed || d.ran_ms < 0 || !d.measured) return;
  std::lock_guard<std::mutex> l(s.m);
  DopState::Measured& m = *d.measured;
  (d.native ? m.native_ms : m.dop_ms) = d.ran_ms;  // the latest (dop's without the programs it built)
  ++(d.native ? m.native_n : m.dop_n);
}

}  // namespace dop::intercept

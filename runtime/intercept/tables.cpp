// The interposer's tables: what the application created (programs and their sources, kernels and their arguments,
// buffers and the memory objects dop does not run with), recorded by the exported create, set and release entry
// points, each forwarding to the real implementation first. dop's own objects (created under the guard) are never
// recorded: a create call under the guard erases any stale entry at the returned address.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "interpose.hpp"  // first: it sets which OpenCL APIs are in use
#include "residency.hpp"

#include "forms.hpp"  // kernel forms and DOP_RECORD

namespace dop::intercept {

thread_local int t_inside = 0;

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

// Never destroyed: the application may call OpenCL from its own static destructors.
Tables& tables() {
  static Tables* t = new Tables;
  return *t;
}

namespace {
// Changes with every exclusive hold of the tables' lock (lock_tables): what a thread remembers of the tables
// (SetArgMemo) is valid while it has not changed.
std::atomic<uint64_t> g_tables_generation{1};
}  // namespace

std::unique_lock<std::shared_mutex> lock_tables(Tables& t) {
  std::unique_lock<std::shared_mutex> l(t.m);
  g_tables_generation.fetch_add(1, std::memory_order_release);
  return l;
}

// How many buffers hold writes from the host not yet spent by a kernel (note_host_write): while none do, launches
// look at nothing more than before.
std::atomic<int> g_fed_buffers{0};

std::atomic<uint64_t> g_decision_epoch{0};

uint64_t decision_epoch() { return g_decision_epoch.load(std::memory_order_acquire); }
void decision_inputs_changed() { g_decision_epoch.fetch_add(1, std::memory_order_acq_rel); }
bool host_writes_pending() { return g_fed_buffers.load(std::memory_order_relaxed) > 0; }

int scalar_class(const void* bytes, size_t n) {
  uint64_t x = 0;
  if (bytes && n <= 8) std::memcpy(&x, bytes, n);  // little-endian hosts
  return log2_floor(x);
}

// A buffer's entry goes (t.m held).
void drop_buffer(Tables& t, cl_mem m) {
  auto it = t.buffers.find(m);
  if (it == t.buffers.end()) return;
  if (it->second.fed_bytes > 0) g_fed_buffers.fetch_sub(1, std::memory_order_relaxed);
  t.buffers.erase(it);
  decision_inputs_changed();  // a kernel's argument may name it
}

// A create call made by dop itself: the handle is dop's, so no stale application entry may remain at its address.
void forget_mem(cl_mem m) {
  auto& t = tables();
  auto l = lock_tables(t);
  drop_buffer(t, m);
  t.other_mems.erase(m);
}
void forget_kernel(cl_kernel k) {
  auto& t = tables();
  auto l = lock_tables(t);
  if (t.kernels.erase(k)) decision_inputs_changed();
}
void forget_program(cl_program p) {
  auto& t = tables();
  auto l = lock_tables(t);
  t.programs.erase(p);
}

void track_other_mem(cl_mem m, const char* what) {
  if (!m) return;
  if (t_inside) return forget_mem(m);
  auto& t = tables();
  auto l = lock_tables(t);
  drop_buffer(t, m);
  t.other_mems[m] = what;
}

void track_buffer(cl_mem m, cl_mem_flags flags, size_t size) {
  if (!m) return;
  if (t_inside) return forget_mem(m);
  auto& t = tables();
  auto l = lock_tables(t);
  t.other_mems.erase(m);
  drop_buffer(t, m);
  t.buffers[m] = BufferInfo{size, flags, false, nullptr};
  decision_inputs_changed();  // a kernel's argument may name its address
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
  {
    auto& t = tables();
    auto l = lock_tables(t);
    if (auto p = t.programs.find(program); p != t.programs.end())
      for (const ModelArgs& m : p->second.model_args)
        if (m.kernel == ki.name) {
          ki.model_args = m.args == ki.args.size() ? m.names : 0;
          ki.model_args_known = true;
        }
    t.kernels[k] = std::move(ki);
  }
  forget_launch_classes(k);  // of an earlier kernel at the same address
}

std::string kernel_name_of(cl_kernel k) {
  size_t len = 0;
  if (clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, 0, nullptr, &len) != CL_SUCCESS || len == 0) return {};
  std::string s(len, '\0');
  if (clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, len, s.data(), nullptr) != CL_SUCCESS) return {};
  return s.c_str();
}

namespace {

// What clSetKernelArg was given: its kind, size, buffer (mem), bytes (scalar) or what it is (unsupported).
struct ArgValue {
  ArgInfo::Kind kind = ArgInfo::Kind::unset;
  size_t size = 0;
  cl_mem mem = nullptr;
  const unsigned char* bytes = nullptr;
  const char* why = nullptr;
};

// What a pointer-sized argument value is in the tables: a buffer dop follows (its size and flags), another memory
// object or a sampler dop does not run with (what it is), or neither (a scalar).
struct MemClass {
  cl_mem m = nullptr;
  ArgInfo::Kind kind = ArgInfo::Kind::scalar;
  const char* why = nullptr;  // unsupported: what it is (the tables' string: valid while the generation lasts)
  size_t size = 0;
  cl_mem_flags flags = 0;
};

MemClass classify_mem(const Tables& t, cl_mem m) {  // t.m held
  MemClass c;
  c.m = m;
  if (!m) return c;
  if (auto b = t.buffers.find(m); b != t.buffers.end()) {
    c.kind = ArgInfo::Kind::mem;
    c.size = b->second.size;
    c.flags = b->second.flags;
  } else if (auto o = t.other_mems.find(m); o != t.other_mems.end()) {
    c.kind = ArgInfo::Kind::unsupported;
    c.why = o->second.c_str();
  } else if (t.samplers.count(reinterpret_cast<cl_sampler>(m))) {
    c.kind = ArgInfo::Kind::unsupported;
    c.why = "sampler";
  }
  return c;
}

// What a thread's clSetKernelArg found in the tables, for its next calls: the entries of the last few kernels it set
// arguments of (nodes of the kernels' map, which no insertion moves; an application's step sets those of two or three
// kernels in turn, as lu's and stencil's do) and the classes of the last few argument values (an application
// alternates a few buffers). Valid while the tables' generation is the one it was made in: an object the application
// created, released or passed to this thread since has changed it (its clCreate... or clRelease... held the lock
// exclusively before the object could reach this call), so that the memo never answers for a table entry that
// changed. One kernel's entry is written only by that kernel's clSetKernelArg and read by its launches: OpenCL has the
// application keep them apart.
struct SetArgMemo {
  uint64_t generation = 0;
  static constexpr size_t kKernels = 4;
  struct Kernel {
    cl_kernel kernel = nullptr;
    KernelInfo* info = nullptr;
  } kernels[kKernels];
  size_t next_kernel = 0;
  static constexpr size_t kMems = 8;
  MemClass mems[kMems];
  size_t next = 0;

  void renew(uint64_t g) {
    *this = SetArgMemo{};
    generation = g;
  }
  KernelInfo* find(cl_kernel k) const {
    for (const Kernel& e : kernels)
      if (e.kernel == k) return e.info;
    return nullptr;
  }
  void add(cl_kernel k, KernelInfo* info) { kernels[next_kernel++ % kKernels] = {k, info}; }
  // An empty slot answers for the null pointer what classify_mem does: a scalar.
  const MemClass* find(cl_mem m) const {
    for (const MemClass& c : mems)
      if (c.m == m) return &c;
    return nullptr;
  }
  void add(const MemClass& c) { mems[next++ % kMems] = c; }
};
thread_local SetArgMemo t_set_arg;

// Whether setting argument `i` of `k` to `now` may change the class of its launches (decide.cpp, class_key: each
// argument's kind and size, a buffer's size and flags, the power of two of a scalar the model reads) or which of its
// arguments are buffers dop follows (kernel_buffers): not another buffer of the same size and flags (a ping-pong), nor
// another value of a scalar the model does not read (a step counter). A kernel whose model scalars are not known yet
// has no launch class. `was_mem` and `now_mem`: the classes of the old and the new buffer (mem arguments).
bool changes_class(const KernelInfo& k, cl_uint i, const ArgValue& now, const MemClass* was_mem,
                   const MemClass* now_mem) {
  const ArgInfo& was = k.args[i];
  if (was.kind != now.kind || was.size != now.size) return true;
  switch (now.kind) {
    case ArgInfo::Kind::mem:
      if (was.mem == now.mem) return false;
      return !was_mem || !now_mem || was_mem->kind != ArgInfo::Kind::mem || now_mem->kind != ArgInfo::Kind::mem ||
             was_mem->size != now_mem->size || was_mem->flags != now_mem->flags;
    case ArgInfo::Kind::scalar:
      return k.class_scalars_known && i < 64 && (k.class_scalars >> i & 1) &&
             scalar_class(was.bytes.data(), was.bytes.size()) != scalar_class(now.bytes, now.size);
    case ArgInfo::Kind::local:
      return false;  // its size is all the class keeps
    default:
      return true;  // an argument dop does not run with (what it is may differ)
  }
}

// clSetKernelArg's update of the tables, after the implementation took the value: the kernel's argument as it is
// now, and whether its launches' class may change. Looks the kernel and the buffers up under the tables' lock (held
// shared) only where this thread's memo lacks them.
void set_tracked_arg(cl_kernel kernel, cl_uint arg_index, size_t arg_size, const void* arg_value) {
  SetArgMemo& memo = t_set_arg;
  if (memo.generation != g_tables_generation.load(std::memory_order_acquire)) memo.renew(0);
  const bool pointer_sized = arg_value && arg_size == sizeof(cl_mem);
  cl_mem m = nullptr;
  if (pointer_sized) std::memcpy(&m, arg_value, sizeof m);
  KernelInfo* k = kernel ? memo.find(kernel) : nullptr;
  // The argument's new value and its old buffer, where they are pointers: their classes, from the memo.
  const MemClass* now_mem = nullptr;
  const MemClass* was_mem = nullptr;
  auto from_memo = [&] {
    if (!k) return false;
    if (arg_index >= k->args.size()) return true;
    const ArgInfo& was = k->args[arg_index];
    if (pointer_sized && !(now_mem = memo.find(m))) return false;
    return was.kind != ArgInfo::Kind::mem || (was_mem = memo.find(was.mem));
  };
  if (!from_memo()) {
    auto& t = tables();
    std::shared_lock<std::shared_mutex> l(t.m);  // no exclusive holder changes the tables meanwhile
    // The generation under the lock: what is looked up below belongs to it.
    const uint64_t generation = g_tables_generation.load(std::memory_order_acquire);
    if (memo.generation != generation) memo.renew(generation);
    auto it = t.kernels.find(kernel);
    if (it == t.kernels.end()) return;
    k = &it->second;
    if (!memo.find(kernel)) memo.add(kernel, k);
    if (arg_index < k->args.size()) {
      if (pointer_sized && !memo.find(m)) memo.add(classify_mem(t, m));
      const ArgInfo& was = k->args[arg_index];
      if (was.kind == ArgInfo::Kind::mem && !memo.find(was.mem)) memo.add(classify_mem(t, was.mem));
    }
    from_memo();  // finds both now (the ring holds eight: two additions keep each other)
  }
  if (arg_index >= k->args.size()) return;
  ArgValue a;
  a.size = arg_size;
  if (!arg_value) {
    a.kind = ArgInfo::Kind::local;
  } else if (pointer_sized && now_mem && now_mem->kind != ArgInfo::Kind::scalar) {
    a.kind = now_mem->kind;
    if (a.kind == ArgInfo::Kind::mem) a.mem = m;
    a.why = now_mem->why;
  } else {
    a.kind = ArgInfo::Kind::scalar;
    a.bytes = static_cast<const unsigned char*>(arg_value);
  }
  if (changes_class(*k, arg_index, a, was_mem, now_mem)) decision_inputs_changed();
  // Set in place: a scalar set at every launch (a step counter) reuses its bytes' storage.
  ArgInfo& arg = k->args[arg_index];
  arg.kind = a.kind;
  arg.size = a.size;
  arg.mem = a.mem;
  if (a.bytes)
    arg.bytes.assign(a.bytes, a.bytes + a.size);
  else
    arg.bytes.clear();
  if (a.why)
    arg.why = a.why;
  else
    arg.why.clear();
}

}  // namespace

// A buffer gets an alias dop does not follow (a sub-buffer, an image over it): its results are written back now and
// after every later dop launch, so that the alias always sees them.
void buffer_aliased(cl_mem parent) {
  if (!parent || t_inside) return;
  {
    auto& t = tables();
    auto l = lock_tables(t);
    auto it = t.buffers.find(parent);
    if (it == t.buffers.end()) return;
    it->second.aliased = true;
  }
  auto st = buffer_state(parent, false);
  if (!st) return;
  Inside guard;
  auto l = when_idle(*st);
  st->eager = true;
  flush_all(*st);
}

void kernel_buffers(const Tables& t, const KernelInfo& k, KernelBuffers& kb) {
  kb.known = k.unsupported.empty();
  kb.mems.clear();
  kb.fed_bytes = kb.bytes = 0;
  kb.fed_since = {};
  const bool fed = g_fed_buffers.load(std::memory_order_relaxed) > 0;
  for (const ArgInfo& a : k.args) {
    if (a.kind == ArgInfo::Kind::unsupported && a.why != "sampler")
      kb.known = false;  // SVM, sub-buffer, image: aliases
    if (a.kind != ArgInfo::Kind::mem) continue;
    auto b = t.buffers.find(a.mem);
    if (b == t.buffers.end()) continue;
    kb.mems.emplace_back(a.mem, b->second.flags);
    if (!fed) continue;
    kb.bytes += b->second.size;
    if (b->second.fed_bytes == 0) continue;
    if (kb.fed_bytes == 0 || b->second.fed_since < kb.fed_since) kb.fed_since = b->second.fed_since;
    kb.fed_bytes += std::min(b->second.fed_bytes, b->second.size);
  }
}

void note_host_write(cl_mem m, size_t bytes) {
  if (bytes == 0) return;
  auto& t = tables();
  auto l = lock_tables(t);
  auto b = t.buffers.find(m);
  if (b == t.buffers.end()) return;
  if (b->second.fed_bytes == 0) {
    b->second.fed_since = std::chrono::steady_clock::now();
    g_fed_buffers.fetch_add(1, std::memory_order_relaxed);
  }
  b->second.fed_bytes += bytes;
}

void clear_host_writes(KernelBuffers& kb) {
  if (kb.fed_bytes == 0) return;
  kb.fed_bytes = 0;
  auto& t = tables();
  auto l = lock_tables(t);
  for (const auto& mb : kb.mems) {
    auto b = t.buffers.find(mb.first);
    if (b == t.buffers.end() || b->second.fed_bytes == 0) continue;
    b->second.fed_bytes = 0;
    g_fed_buffers.fetch_sub(1, std::memory_order_relaxed);
  }
}

KernelBuffers kernel_buffers(cl_kernel k) {
  KernelBuffers kb;
  auto& t = tables();
  auto l = lock_tables(t);
  auto it = t.kernels.find(k);
  if (it != t.kernels.end()) kernel_buffers(t, it->second, kb);
  return kb;
}

}  // namespace dop::intercept

using namespace dop::intercept;

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
    auto l = lock_tables(t);
    const size_t h = std::hash<std::string>{}(*src);
    t.programs[p] = ProgramInfo{std::move(src), {}, false, h, {}};
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
  auto l = lock_tables(t);
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
    auto l = lock_tables(t);
    auto it = t.programs.find(program);
    if (it != t.programs.end()) {
      it->second.options = options ? options : "";
      it->second.built = r == CL_SUCCESS;
      it->second.model_args.clear();  // the previous build's (prepare_dop finds this one's)
      if (r == CL_SUCCESS) source = it->second.source;
    }
  } catch (...) {
  }
  if (source) dop_intercept::record_build(program, *source, options ? options : "", log_line);
  // Before the application times its launches.
  if (r == CL_SUCCESS) prepare_dop(program, source.get(), options ? options : "");
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
    {
      auto& t = tables();
      auto l = lock_tables(t);
      auto it = t.kernels.find(source_kernel);
      if (it != t.kernels.end()) {
        KernelInfo copy = it->second;  // the clone has the source kernel's arguments
        t.kernels[k] = std::move(copy);
      } else {
        t.kernels.erase(k);
      }
    }
    forget_launch_classes(k);  // of an earlier kernel at the same address
  } catch (...) {
    forget_kernel(k);
  }
  return k;
}

DOP_EXPORT cl_int clReleaseCommandQueue(cl_command_queue command_queue) {
  REAL(clReleaseCommandQueue);
  if (!real_clReleaseCommandQueue) return CL_INVALID_OPERATION;
  forget_queue_devices();
  decision_inputs_changed();  // a launch repeated for a queue (native_again) takes its device from the queue's handle
  return real_clReleaseCommandQueue(command_queue);
}

DOP_EXPORT cl_int clReleaseKernel(cl_kernel kernel) {
  REAL(clReleaseKernel);
  if (!real_clReleaseKernel) return CL_INVALID_OPERATION;
  if (!t_inside && kernel) {
    cl_uint refs = 0;
    if (clGetKernelInfo(kernel, CL_KERNEL_REFERENCE_COUNT, sizeof refs, &refs, nullptr) == CL_SUCCESS && refs == 1) {
      forget_kernel(kernel);
      forget_launch_classes(kernel);
    }
  }
  return real_clReleaseKernel(kernel);
}

DOP_EXPORT cl_int clSetKernelArg(cl_kernel kernel, cl_uint arg_index, size_t arg_size, const void* arg_value) {
  REAL(clSetKernelArg);
  if (!real_clSetKernelArg) return CL_INVALID_OPERATION;
  const cl_int r = real_clSetKernelArg(kernel, arg_index, arg_size, arg_value);
  if (r != CL_SUCCESS || t_inside) return r;
  try {
    set_tracked_arg(kernel, arg_index, arg_size, arg_value);
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
    auto l = lock_tables(t);
    auto it = t.kernels.find(kernel);
    if (it != t.kernels.end() && arg_index < it->second.args.size()) {
      ArgInfo a;
      a.kind = ArgInfo::Kind::unsupported;
      a.why = "SVM pointer";
      it->second.args[arg_index] = std::move(a);
      decision_inputs_changed();
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
    auto l = lock_tables(t);
    auto it = t.kernels.find(kernel);
    if (it != t.kernels.end()) {
      it->second.unsupported = "clSetKernelExecInfo (SVM) was used";
      decision_inputs_changed();
    }
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
  if (m) buffer_aliased(buffer);
  return m;
}

DOP_EXPORT cl_mem clCreateImage(cl_context context, cl_mem_flags flags, const cl_image_format* image_format,
                                const cl_image_desc* image_desc, void* host_ptr, cl_int* errcode_ret) {
  REAL(clCreateImage);
  if (!real_clCreateImage) MISSING_RET(CL_INVALID_OPERATION);
  cl_mem m = real_clCreateImage(context, flags, image_format, image_desc, host_ptr, errcode_ret);
  TRACK_OTHER(m, "image");
  if (m && image_desc) buffer_aliased(image_desc->buffer);
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
  if (m && image_desc) buffer_aliased(image_desc->buffer);
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
  auto l = lock_tables(t);
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

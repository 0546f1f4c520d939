// dop's state in the interposer: the devices and configuration read once (DOP_CONFIG, DOP_MODEL, DOP_BUNDLES,
// DOP_MEMORY, DOP_AUTO_*, DOP_ASYNC), and whether a queue's device is the configuration in whole.
#include <link.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <thread>

#include "dop/platform.hpp"
#include "launch.hpp"

#include "forms.hpp"  // kernel forms (DOP_BUNDLES, the forms cache, DOP_BUNDLER) and DOP_RECORD

namespace dop::intercept {

DopState& dop_state() {
  static DopState* s = [] {
    set_engine_thread_hook([] { ++t_inside; });  // the engine's threads are dop's: their calls go through untouched
    return new DopState;
  }();  // never destroyed (see tables())
  return *s;
}

bool native_route(const Config& c, cl_device_id app_device, const cl::Selection& sel) {
  if (sel.gpu && app_device == sel.gpu->device) return c.cpu == 0 && c.gpu >= 1;
  if (sel.cpu && app_device == sel.cpu->device) return c.gpu == 0 && c.cpu >= 1;
  return false;
}

namespace {
std::atomic<unsigned> g_queue_epoch{0};  // bumped by every release of a queue (forget_queue_devices)
}  // namespace

cl_device_id queue_device(cl_command_queue q) {
  // The thread's latest queue and its device: asked of the driver once per queue and thread, not at every launch
  // (a driver may take a lock that another thread's enqueue holds). A released queue's handle may come back as
  // another queue: any release makes every thread ask again.
  thread_local cl_command_queue last = nullptr;
  thread_local cl_device_id last_device = nullptr;
  thread_local unsigned last_epoch = 0;
  const unsigned epoch = g_queue_epoch.load(std::memory_order_acquire);
  if (q == last && q && epoch == last_epoch) return last_device;
  cl_device_id d = nullptr;
  if (clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof d, &d, nullptr) != CL_SUCCESS) return nullptr;
  last = q;
  last_device = d;
  last_epoch = epoch;
  return d;
}

void forget_queue_devices() { g_queue_epoch.fetch_add(1, std::memory_order_acq_rel); }

namespace {
// Reads one byte of each page of [p, p + n). Not instrumented: the bytes read may be AddressSanitizer's redzones
// between globals (a read of them is no use of them).
__attribute__((no_sanitize_address)) void touch_pages(const volatile unsigned char* p, size_t n) {
  for (size_t off = 0; off < n; off += 4096) (void)p[off];
}

// Maps this library's code and read-only data into the page tables now (a read of each page), so that a launch path's
// first run does not take a page fault for each page of code it meets (tens of microseconds in an application's
// first launch of each kernel). Called once, by initialise.
void touch_own_pages() {
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void*) {
        const auto self = reinterpret_cast<ElfW(Addr)>(&touch_own_pages);
        bool mine = false;
        for (int i = 0; i < info->dlpi_phnum && !mine; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          mine = ph.p_type == PT_LOAD && self >= info->dlpi_addr + ph.p_vaddr &&
                 self < info->dlpi_addr + ph.p_vaddr + ph.p_memsz;
        }
        if (!mine) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || (ph.p_flags & PF_W)) continue;
          touch_pages(reinterpret_cast<const volatile unsigned char*>(info->dlpi_addr + ph.p_vaddr), ph.p_memsz);
        }
        return 1;
      },
      nullptr);
}

// What the launch path would otherwise do at the application's first launch, once per process or thread, done for the
// thread that initialises (which builds the application's first program, and in most applications launches its
// kernels): the switches it reads from the environment read, the implementation's enqueue looked up, the thread's
// launch scratch made (a thread-local with a destructor: registered with the C++ runtime at its first use) and given
// room for keys of a few dozen arguments, by resizing them as a key is made (decide.cpp, KeyWriter: the C++ library's
// first call of memset is bound then); and dop's memos of kernels and of launch classes' times given room for dozens
// and hundreds, so that a class's first launch does not rehash them (which touches every entry).
void prepare_launches(DopState& s) {
  log_enabled();
  checking_repeats();
  real_enqueue_ndrange();
  LaunchScratch& scratch = launch_scratch();
  for (std::string* key : {&scratch.class_key, &scratch.new_class_key, &scratch.measured_key}) {
    key->resize(512);
    key->clear();
  }
  scratch.buffers.mems.reserve(16);
  s.memo.reserve(64);
  s.measured.reserve(512);
}

pid_t g_model_reader_pid = 0;  // the process whose thread reads the model (a fork()ed child has no such thread)

// Whether waiting for the model's reading can end: in the process that started it, or once it has ended.
bool model_reading_ends(const DopState& s) {
  return getpid() == g_model_reader_pid || s.predictor.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

// At exit, the reading is let finish (a process that ends before its model is read waits for what is left of it), so
// that an error of it reaches stderr and no thread of dop's runs while the statics made before the reading started
// are destroyed. (Those made after, which the exit destroys before this runs, are none of the reading's: the
// predictor's own tables are never destroyed.) A reading deferred to its first use is not started here.
void finish_model_reading() {
  const DopState& s = dop_state();
  if (s.predictor.valid() && model_reading_ends(s) &&
      s.predictor.wait_for(std::chrono::seconds(0)) != std::future_status::deferred)
    s.predictor.wait();
}

// Starts reading the model on a thread of its own: the application's start and its first launches go on meanwhile.
// The thread runs at the lowest priority (nice 19; Linux's nice is per thread): it takes the cores the application
// leaves idle (a GPU application's host leaves most), and yields to the application's own threads where they keep
// every core busy (a CPU device's work), until a launch or the exit waits for it. DOP_PLATFORM_ID refuses another
// platform's model; without it, one trained for other devices is warned about.
// Where no thread can be started, the model is read by the first launch that needs it.
void read_model(DopState& s, const std::string& path) {
  g_model_reader_pid = getpid();
  // DOP_TEST_MODEL_READ_DELAY_MS: the reading thread sleeps that long first (tests: a reading that takes a known
  // time whatever the machine's load).
  const char* delay_env = std::getenv("DOP_TEST_MODEL_READ_DELAY_MS");
  const long delay_ms = delay_env ? std::strtol(delay_env, nullptr, 10) : 0;
  auto read = [path, sel = s.sel, delay_ms](bool own_thread) {
    Inside guard;  // dop's own work (it makes no OpenCL call)
#ifdef __linux__
    if (own_thread) setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);  // at worst, not lowered
#endif
    if (own_thread && delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    try {
      return std::shared_ptr<const pred::Predictor>(load_model_for_platform(path, "", sel));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "dop: error: DOP_MODEL: %s; DOP_CONFIG=auto runs every launch on the application's device\n",
                   e.what());
      throw;
    }
  };
  try {
    s.predictor = std::async(std::launch::async, read, true).share();
  } catch (const std::system_error&) {
    s.predictor = std::async(std::launch::deferred, read, false).share();
  }
  std::atexit(finish_model_reading);
}
}  // namespace

void initialise(DopState& s) {
  if (s.initialised) return;
  s.initialised = true;
  touch_own_pages();
  prepare_launches(s);
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
      s.model_path = model;  // read from when it may be needed soon (start_model_reading)
      s.auto_config = true;
    } else if (cfg && *cfg) {
      s.config = parse_config(cfg);
    } else {
      s.config = Config{s.sel.cpu ? 1.0 : 0.0, s.sel.gpu ? 1.0 : 0.0};  // all cores, the whole GPU
    }
    const char* mem = std::getenv("DOP_MEMORY");
    if (mem && *mem) s.memory = parse_memory_mode(mem);
    if (s.memory == MemoryMode::pinned)  // dop's host copies are its own: make_args' memory never holds them
      throw std::runtime_error(
          "DOP_MEMORY=pinned: for arguments made by an executor (dop run, dop sweep); under "
          "dop exec use copy or auto");
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
    // A launch asks the model at once (no budget to spend first): its reading starts now.
    if (s.auto_config && !(s.check_auto && s.native_first && s.explore_ms > 0)) start_model_reading(s);
  } catch (const std::exception& e) {
    s.init_error = e.what();
  }
  s.ready.store(true, std::memory_order_release);
}

void start_model_reading(DopState& s) {
  std::call_once(s.model_started, [&s] { read_model(s, s.model_path); });
}

bool model_askable(const DopState& s) {
  if (s.explore_ms <= 0) return true;               // DOP_AUTO_EXPLORE_MS=0: asked at once, its reading waited for
  if (!s.predictor.valid()) return false;           // not started
  if (getpid() != g_model_reader_pid) return true;  // a fork()ed child: model() says why it has none
  const auto status = s.predictor.wait_for(std::chrono::seconds(0));
  return status != std::future_status::timeout;  // read (or failed), or deferred: read by the launch that asks
}

std::shared_ptr<const pred::Predictor> model(DopState& s) {
  start_model_reading(s);
  if (!model_reading_ends(s)) throw std::runtime_error("read by the process that fork()ed this one, not by this one");
  return s.predictor.get();  // the reader's exception, rethrown (the same one for every caller)
}

bool fixed_native(cl_command_queue queue) {
  DopState& s = dop_state();
  if (!s.ready.load(std::memory_order_acquire) || !s.init_error.empty() || s.auto_config) return false;
  return native_route(s.config, queue_device(queue), s.sel);
}

Clock::time_point budget_now() {
#ifdef CLOCK_MONOTONIC_COARSE
  timespec ts{};
  if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) == 0)
    return Clock::time_point(std::chrono::duration_cast<Clock::duration>(std::chrono::seconds(ts.tv_sec) +
                                                                         std::chrono::nanoseconds(ts.tv_nsec)));
#endif
  return Clock::now();
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

void prepare_dop(cl_program program, const std::string* source, const std::string& options) {
  try {
    Inside guard;
    DopState& s = dop_state();
    {
      std::lock_guard<std::mutex> l(s.m);
      initialise(s);
    }
    // Set once by initialise: read without the lock (the resolver has its own).
    if (!source || !s.init_error.empty() || !s.forms) return;
    const auto resolved = dop_intercept::resolve_program_forms(*s.forms, program, *source, options, log_line);
    if (!s.auto_config) return;
    std::vector<ModelArgs> model_args;  // for the kernels' first decisions (launch_class in decide.cpp)
    for (const auto& [kernel, forms] : resolved)
      model_args.push_back(ModelArgs{kernel, forms->arg_names.size(), model_arg_names(*forms)});
    auto& t = tables();
    auto l = lock_tables(t);
    if (auto p = t.programs.find(program); p != t.programs.end()) p->second.model_args = std::move(model_args);
  } catch (...) {
  }
}

}  // namespace dop::intercept

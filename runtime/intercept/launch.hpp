// The interposer's launches, inside (internal to libdop_intercept.so): dop's state (devices, configuration,
// executors, what auto measured), a launch's plan and decision, and the steps of a launch in the files of their
// concern: state.cpp (dop's state, read once), decide.cpp (what dop can run and what it decides), dop_route.cpp (a
// launch on dop's devices, on its worker thread), launch.cpp (the exported enqueues: native, dop or fallback).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "interpose.hpp"  // first: it sets which OpenCL APIs are in use
#include "residency.hpp"

namespace dop::intercept {

using Clock = std::chrono::steady_clock;

struct DopState {
  std::atomic<bool> ready{false};  // initialise has run: sel, config, auto_config and init_error no longer change
  std::mutex m;                    // guards everything below (dop launches run one at a time on the worker)
  bool initialised = false;
  std::string init_error;  // non-empty: dop cannot run anything (every launch falls back with this reason)
  cl::Selection sel;
  Config config;
  bool auto_config = false;  // DOP_CONFIG=auto: the model (DOP_MODEL) decides every launch
  // DOP_CONFIG=auto: the model (DOP_MODEL), read on a thread of its own (start_model_reading) once a launch class has
  // spent a quarter of its exploration budget (it asks the model when it has spent all of it), or at initialise where
  // a launch asks it at once; model() waits for it. A run whose classes never get that far never reads it.
  std::string model_path;
  std::once_flag model_started;
  std::shared_future<std::shared_ptr<const pred::Predictor>> predictor;
  std::unique_ptr<KernelFormsResolver> forms;  // the kernels' forms, from the bundles of DOP_BUNDLES
  MemoryMode memory = MemoryMode::automatic;
  // One entry per program, kernel and argument signature: what its first launch reads of the kernel's forms (set
  // then, never changed), and its executor, made only for a launch that needs it (make_executor) and rebound to each
  // launch shape.
  struct Entry {
    std::mutex m;                    // guards exec, args and in_app
    std::unique_ptr<Executor> exec;  // null until the first dop launch
    std::vector<ArgData> args;       // scalars, and the buffers while a launch runs (svm: in the executor's memory)
    int launches = 0;                // that ran: the first runs synchronously, so that a build error can fall back
    bool failed = false;             // guarded by DopState::m: dop cannot build or run it (`failed` says why)
    std::string no_model;            // DOP_CONFIG=auto without options.model (no code features, no usable model): why
    Spec spec;  // the first launch's, with the kernel's argument names and declared scalar types (from its forms)
    // What the executor is made with: the memory mode, the kernel's forms (options.footprint: what a launch fetches
    // and leaves stale; empty: no buffer is bounded) and under auto its model (code features and memo key).
    ExecutorOptions options;
    // Per application context on dop's GPU: an executor whose GPU side runs there, on the application's buffers
    // (dop_route.cpp), made at the context's first dop launch of the kernel.
    std::map<cl_context, std::unique_ptr<Executor>> in_app;
  };
  std::map<std::string, std::shared_ptr<Entry>> executors;
  std::map<std::string, std::string> failed;  // executor key -> why it failed (not retried)
  // DOP_CONFIG=auto: launch times measured per launch class (executor key and shape), both ways (check_auto).
  struct Measured {
    double native_ms = 0, dop_ms = 0;  // the latest timed launch each way
    int native_n = 0, dop_n = 0, launches = 0;
    int interval = 8, next_check = 16;  // when the slower way is timed again
    bool last_native = true;            // the class's last launch ran on the application's device
    bool time_dop_next = false;         // dop's way ran untimed to warm up (check_against_native): time the next
    bool prepared = false;              // the class's buffers take the application's writes before dop's first try
    Clock::time_point first;            // the class's first launch: its native launches cannot have taken longer
  };
  std::unordered_map<std::string, Measured> measured;
  // Per application kernel and launch class (decide.cpp: its argument signature, the power of two of its work-items,
  // its local size, and the powers of two of the scalars the model reads): what decide() derived at the class's
  // first launch (executor, spec, the model's choice, the class's times), so that a later launch of the class, whatever
  // its exact NDRange, is decided by one lookup.
  struct ClassMemo {
    std::shared_ptr<Entry> entry;      // null while model_pending
    std::shared_ptr<const Spec> spec;  // the latest launch of the class that dop ran (rebound to each launch's shape)
    std::string key;                   // the executor's (empty while model_pending)
    Config model_config;
    double decide_us = 0;
    Measured* measured = nullptr;  // the class's times (a map node: stable)
    bool model_pending = false;    // the model is not asked yet: the class runs natively until its budget is spent
    // Its executor key failed (DopState::failed): its launches fall back to the application's own enqueue, as
    // native ones run, without being decided again (decide_known_class; with dop's log, decide() says why each time).
    bool fallback = false;
  };
  struct KernelMemo {
    std::string name;
    std::unordered_map<std::string, ClassMemo> classes;       // by class key
    std::pair<const std::string, ClassMemo>* last = nullptr;  // the class of the kernel's latest launch
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
  // Per application context on dop's GPU: the application's buffers as the GPU's copies (adopted for each launch).
  std::map<cl_context, std::shared_ptr<DeviceData>> app_data;
};

DopState& dop_state();

// The decision is the application's own device in whole: nothing for dop to add.
bool native_route(const Config& c, cl_device_id app_device, const cl::Selection& sel);
// The device of a queue (cached per thread: one driver query per queue and thread until a queue is released).
cl_device_id queue_device(cl_command_queue q);
// Reads dop's devices and configuration, once (docs/intercept.md, "Environment"); an error is kept in init_error.
// Called with dop_state().m held and the guard set.
void initialise(DopState& s);
// DOP_CONFIG=auto: starts reading the model on a thread of its own, once (later calls return at once).
void start_model_reading(DopState& s);
// DOP_CONFIG=auto: the model, once read (starts its reading if nothing did, and waits for it). A model that cannot be
// used (unreadable, corrupt, another platform's under DOP_PLATFORM_ID) throws why, said once on stderr by its reader:
// every launch that needs the model runs on the application's device, the log saying why. Called after initialise,
// without the lock.
std::shared_ptr<const pred::Predictor> model(DopState& s);
/// Whether a class whose exploration budget is spent may ask the model now: model() returns without waiting for the
/// reading thread (read, failed, or read by the caller where no thread could be started), or DOP_AUTO_EXPLORE_MS=0
/// (asked at once). Until then the class goes on natively, unasked, for at most another budget (decide.cpp,
/// ask_model_now), rather than stall the application for the rest of the reading (a 0.6 MB model takes tens of ms).
bool model_askable(const DopState& s);
// A fixed DOP_CONFIG that is the queue's device in whole (read without the lock once initialise has run).
bool fixed_native(cl_command_queue queue);

inline double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}
/// The clock of auto's exploration budget (a launch class's wall time, against DOP_AUTO_EXPLORE_MS): Linux's coarse
/// monotonic clock, the same time line as Clock to within a scheduler tick (1-4 ms), read from memory the kernel
/// shares with the process. Clock::now() may be a system call where the time source cannot be read from user space
/// (some virtual machines): a microsecond on every launch of a class whose budget is not spent.
Clock::time_point budget_now();
// A launch size for the log ("auto" when the application left it to the implementation), and milliseconds.
std::string dims(cl_uint n, const size_t* v);
std::string fmt_ms(double ms);

// What a thread's launches make anew at each launch, kept between them so that a launch allocates none of it (their
// capacity stays): the kernel's buffers, its class key, and the keys a class's first launch files it under. Made at
// the thread's first launch, or by initialise for the thread that builds the application's first program (most
// applications launch from it), so that its first launch does not make them.
struct LaunchScratch {
  KernelBuffers buffers;         // decide_and_launch
  std::string class_key;         // decide_known_class
  uint64_t class_key_epoch = 0;  // decision_epoch() before the tables were read for class_key
  std::string new_class_key;     // decide (a class's first launch)
  std::string measured_key;      // the class's times (decide.cpp, measured_of)
};
inline LaunchScratch& launch_scratch() {
  thread_local LaunchScratch scratch;
  return scratch;
}

// The implementation's clEnqueueNDRangeKernel (the next definition, dlsym(RTLD_NEXT)), looked up once: by initialise
// (the application's first build), so that its first launch does not.
decltype(&::clEnqueueNDRangeKernel) real_enqueue_ndrange();

// What an enqueue needs, copied out of the tables under their lock.
struct LaunchPlan {
  std::string kernel_name;
  std::shared_ptr<const std::string> source;
  size_t source_hash = 0;
  std::string options;
  std::vector<ArgInfo> args;
  struct Buffer {
    size_t size = 0;
    cl_mem_flags flags = 0;
  };
  std::vector<Buffer> buffers;  // per argument (mem arguments only): what its key and spec read of the buffer
};

// Returns "" and fills `plan` when dop can run this launch, else the reason it cannot. `tracked`: the tables know the
// kernel; then `kb`, where given, gets its buffers (kernel_buffers) whether dop can run the launch or not.
std::string plan_launch(cl_kernel kernel, cl_uint work_dim, const size_t* offset, const size_t* global,
                        const size_t* local, LaunchPlan& plan, bool& tracked, KernelBuffers* kb = nullptr);

// What a launch was decided to be.
struct Decision {
  Config config;
  bool native = false;
  bool automatic = false;
  double decide_us = 0;
  // Under DOP_CONFIG=auto with a choice to check (check_auto), or a class whose model is not asked yet: its times
  // (guarded by DopState::m), the way this launch runs ("model" as decided, "native" to time the application's
  // device, "measured": the faster way measured), and whether it is timed. ran_ms: the launch's time, for the record.
  DopState::Measured* measured = nullptr;
  const char* way = "model";
  bool timed = false;
  double ran_ms = -1;
  bool async = false;        // the dop route returned before the launch ran
  bool known_class = false;  // decided by its launch class's memo (decide_known_class)
  // Under auto, for the log: "later" (the class runs natively before its model is asked: model_deferred in decide.cpp),
  // "asked" (asked at this launch, the class's first after its exploration budget), nullptr otherwise.
  const char* model = nullptr;
  bool data_on_gpu = false;  // under auto: where the launch's data is (decide.cpp, data_on_gpu)
  // Under auto: the application wrote at least half of the launch's buffer bytes from host memory since a kernel
  // last used them (KernelBuffers::fed_bytes), the first of those writes at fed_since. A timed launch of such a class
  // counts from then: its time is the step's, the writes' transfers included.
  bool host_fed = false;
  Clock::time_point fed_since{};
  // A host-fed class's launch on the application's device after which its first try of dop's way comes: its buffers
  // are made to take the application's writes from then on (prepare_for_dop), so that the try finds its inputs.
  bool prepare_dop = false;
  std::shared_ptr<DopState::Entry> entry;  // made for auto decisions and dop launches
  std::shared_ptr<const Spec> spec;        // the launch as a spec (the kernel's argument names)
  std::string key;
};

/// Where a timed launch's time starts: at `start`, or for a host-fed launch at the application's first write of its
/// inputs (Decision::host_fed), so that its time is the step's, the writes' transfers included.
inline Clock::time_point timed_from(const Decision& d, Clock::time_point start) {
  return d.host_fed ? std::min(d.fed_since, start) : start;
}
/// The log's words for where a launch's data is, under auto.
inline const char* data_words(const Decision& d) {
  return d.data_on_gpu ? " data=gpu" : d.host_fed ? " data=host fed=host" : " data=host";
}

// Decides the launch: DOP_CONFIG, or the model (at the class's first launch, or where the class runs natively first
// under the measured check, at its first launch once its exploration budget is spent). Returns why dop cannot run it
// ("" when it can): reasons that hold for every launch of a kernel come back as a string, not an exception, so that
// a fallback costs the launch no more than the real enqueue. Throws (the launch falls back) when the model is to be
// asked and cannot be: no code features, or no executor for the work-group size the application left open.
// `class_key`: the launch's class key as decide_known_class made it (less where the data is), or null: made here.
std::string decide(cl_command_queue queue, cl_kernel kernel, const LaunchPlan& plan, cl_uint work_dim,
                   const size_t* global, const size_t* local, const KernelBuffers& kb, const std::string& not_runnable,
                   const std::string* class_key, Decision& d);
// The fast path of decide(): a launch of a class decided before (by decide()) is decided from the class's memo,
// without a plan: one key made from the tables and one lookup. Fills `kb` with the kernel's buffers, and `name` with
// its name when the log is on. False (nothing changed but `kb`, which may not be filled): decide() must run;
// `key_made`: the launch's class key is in the thread's launch scratch (class_key, less where the data is) for
// decide(), so that a class's first launch does not make it twice. A dop launch decided here still needs plan_launch
// (which may find it cannot run) and shape_spec. A launch on the application's device with nothing to flush or spend is
// remembered for native_again.
bool decide_known_class(cl_command_queue queue, cl_kernel kernel, cl_uint work_dim, const size_t* global,
                        const size_t* local, Decision& d, KernelBuffers& kb, std::string& name, bool& key_made);
// A launch that decide_known_class would decide as it did the thread's latest launch of the kernel in that class,
// on the application's device, untimed, nothing of dop's to flush and no host writes to spend: the class settled
// there (the model chose it) or not asked yet (counted for its exploration budget here). True: the caller enqueues it
// as it is, nothing else to do (not with DOP_LOG, where every launch has its line). False: the full path, nothing done.
// A class is remembered per thread and kernel by decide_known_class; anything its key or decision reads that may
// have changed since (decision_epoch, the shape, the queue's device, host writes, buffer states) sends the launch the
// full way.
bool native_again(cl_command_queue queue, cl_kernel kernel, cl_uint work_dim, const size_t* global,
                  const size_t* local);
// DOP_TEST_CHECK_REPEATS=1 (tests only): each launch repeated from the cache is checked against what the full decision
// reads (a line on stderr, `repeat mismatch:`, where they differ) and said in the log (`repeat=native`).
bool checking_repeats();
// The entry's executor, made at its first need (entry.m held) for the launch `spec` (the entry's argument names and
// types, any shape). A failure is remembered for the key (s.failed; the entry is marked failed) and rethrown: the
// launch falls back, saying why, and so do the key's later launches. `source`: the kernel's program's.
void make_executor(DopState& s, DopState::Entry& entry, const Spec& spec, const std::string& source,
                   const std::string& key);
// dop will not build or run the entry for its devices: remembered for the key (s.failed) and the entry marked, so
// that the key's later launches fall back at once saying why.
void remember_failure(DopState& s, DopState::Entry& entry, const std::string& key, const std::string& why);
// The launch's spec from the class's (the exact NDRange of this launch); called for dop launches of a known class.
void shape_spec(cl_kernel kernel, cl_uint work_dim, const size_t* global, const size_t* local, Decision& d);
// Record of a timed launch (DOP_CONFIG=auto, check_auto).
void record_time(DopState& s, const Decision& d);
// Bit i: argument i of a kernel is named in one of the size expressions of its code features (none without them), so
// that, where it is a scalar, its value's power of two is part of the launch class (KernelInfo::class_scalars).
uint64_t model_arg_names(const KernelForms& forms);

// A dop launch, run on the worker. Synchronous (the first launch of an executor, a timed one, DOP_ASYNC=0): the
// caller waits for its wait list, its queue and the launch, and falls back when dop fails before running. Otherwise
// asynchronous: a marker after the application's earlier commands and wait list starts it, a barrier on a user
// event holds the application's queue until it has run, and the call returns at once with the barrier's event.
cl_int launch_with_dop(cl_command_queue queue, cl_uint num_events, const cl_event* wait_list, cl_event* event,
                       const LaunchPlan& plan, Decision& d);

}  // namespace dop::intercept

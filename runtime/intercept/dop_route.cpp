// A launch on dop's devices (the dop route): dop's worker thread, which runs every such launch in the order they were
// enqueued; the buffers' residency around the engine's launch; synchronous and asynchronous submission.
#include <algorithm>
#include <cstring>
#include <future>
#include <thread>

#include "launch.hpp"

namespace dop::intercept {
namespace {

// Rebinds an executor of the entry to this launch's shape (entry.m held); a shape seen before costs nothing
// (Executor::rebind keeps programs per build key).
void bind_shape(Executor& exec, const Spec& spec) {
  const Spec& cur = exec.spec();
  if (cur.global == spec.global && cur.local == spec.local) return;
  Spec next = cur;
  next.global = spec.global;
  next.local = spec.local;
  exec.rebind(next);
}

// Whether an integer scalar argument has its top bit set: a negative value if the kernel's type is signed.
bool any_top_bit(const Spec& spec, const std::vector<ArgData>& args) {
  for (size_t i = 0; i < spec.args.size(); ++i)
    if (spec.args[i].kind == ArgKind::scalar && args[i].bytes > 0 &&
        (static_cast<const unsigned char*>(args[i].data())[args[i].bytes - 1] & 0x80))
      return true;
  return false;
}

// The application's own memory: where the launch's queue (`side`, dop's queue on the application's context and
// device) is on dop's GPU and the memory mode keeps GPU copies (copy, or automatic on a GPU with memory of its own:
// where it shares host memory, automatic runs zero-copy over dop's host copies), the executor whose GPU side runs in
// the application's context on its buffers (made at the context's first such launch; entry.m held) and the
// context's DeviceData, which adopts the buffers for each launch. Null otherwise: the launch works on dop's copies.
Executor* in_app_executor(DopState& s, DopState::Entry& entry, cl_command_queue side, const LaunchPlan& plan,
                          DeviceData*& data) {
  if (!s.sel.gpu ||
      !(s.memory == MemoryMode::copy || (s.memory == MemoryMode::automatic && !s.sel.gpu->host_unified_memory)))
    return nullptr;
  const cl_device_id dev = queue_device(side);  // cached per thread (the worker's)
  if (dev != s.sel.gpu->device) return nullptr;
  // The executor bounds what it moves by the kernel's footprint; where a scalar's top bit is set (the scalars set)
  // its ranges may not hold (launch_bytes): this launch works on dop's copies, over the bytes launch_bytes trusts.
  if (!entry.options.footprint.empty() && any_top_bit(entry.exec->spec(), entry.args)) return nullptr;
  cl_context ctx = nullptr;
  cl::check(clGetCommandQueueInfo(side, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, nullptr), "clGetCommandQueueInfo",
            "dop's queue on the application's device");
  std::shared_ptr<DeviceData> app_data;
  {
    std::lock_guard<std::mutex> l(s.m);
    auto& d = s.app_data[ctx];
    if (!d) d = std::make_shared<DeviceData>(ctx, dev);
    app_data = d;
  }
  data = app_data.get();
  auto& exec = entry.in_app[ctx];
  if (!exec) {
    // The entry's options: its footprint bounds what each device's chunks move at a configuration of both devices
    // (the engine makes resident buffers current only there).
    ExecutorOptions o = entry.options;
    o.data = std::move(app_data);
    exec = std::make_unique<Executor>(entry.exec->spec(), *plan.source, s.sel, std::move(o));
  }
  bind_shape(*exec, entry.exec->spec());
  return exec.get();
}

void set_scalars(DopState::Entry& entry, const LaunchPlan& plan) {
  const Spec& es = entry.exec->spec();
  for (size_t i = 0; i < es.args.size(); ++i)
    if (es.args[i].kind == ArgKind::scalar) {
      if (entry.args[i].storage.empty()) entry.args[i].storage.resize(1);  // at the first dop launch (make_executor)
      std::memcpy(entry.args[i].data(), plan.args[i].bytes.data(), entry.args[i].bytes);
    }
}

// The signed type of the same size ("uint": "int"); a signed or float type as it is.
ElemType as_signed(ElemType t) {
  const char* name = type_name(t);
  return name[0] == 'u' ? parse_type(name + 1) : t;
}

// What each buffer argument of this launch may read and write over its whole NDRange (entry.m held, the scalars
// set): the kernel's footprint where it bounds the argument (dop/footprint.hpp, clamped to the buffer), whole
// otherwise. The executor's spec types the scalars as the bundle declares them (decide.cpp, declared_type), a type
// not known (a typedef, a vector, a bundle without types) unsigned; where a scalar's top bit is set, the ranges are
// evaluated again with every unsigned scalar read signed (declared ones too: the spec does not say which were), and an
// argument whose ranges differ is left whole.
std::vector<LaunchBytes> launch_bytes(const DopState::Entry& entry) {
  const Spec& es = entry.exec->spec();
  std::vector<LaunchBytes> out(es.args.size());
  if (entry.options.footprint.empty() || es.global.empty()) return out;
  const std::vector<size_t> local = entry.exec->local_size();
  const size_t items = es.global.back();  // the split dimension (FootprintEvaluator's): every id of the launch
  const auto ranges = footprint_ranges(entry.options.footprint, es, entry.args, local, 0, items);
  std::vector<ArgRanges> signed_ranges;
  if (any_top_bit(es, entry.args)) {
    Spec signed_spec = es;
    for (auto& a : signed_spec.args)
      if (a.kind == ArgKind::scalar) a.type = as_signed(a.type);
    signed_ranges = footprint_ranges(entry.options.footprint, signed_spec, entry.args, local, 0, items);
  }
  auto same = [](const std::optional<ByteRange>& a, const std::optional<ByteRange>& b) {
    return a && b && ((a->empty() && b->empty()) || (a->lo == b->lo && a->hi == b->hi));
  };
  auto range = [](const ByteRange& r) {
    return r.empty() ? RangeSet::Range{0, 0} : RangeSet::Range{size_t(r.lo), size_t(r.hi)};
  };
  for (size_t i = 0; i < es.args.size(); ++i) {
    const ArgRanges& r = ranges[i];
    if (!r.read || !r.write) continue;  // not bounded
    if (!signed_ranges.empty() && !(same(r.read, signed_ranges[i].read) && same(r.write, signed_ranges[i].write)))
      continue;
    out[i].whole = false;
    out[i].read = range(*r.read);
    out[i].write = range(*r.write);
  }
  return out;
}

// Runs the launch with dop (on dop's worker thread; `states` are the buffer arguments' states, marked busy by the
// submitter; `queue` is dop's own queue on the application's context and device). The CPU works on dop's host
// copies of the buffers; the GPU on the application's own buffers where its queue is on dop's GPU (in_app_executor:
// the engine moves what each device lacks and says where the results are), else on dop's GPU copies of the host
// copies (fetched here on `queue`). Returns CL_SUCCESS, or throws before anything of the application's has been
// changed (the caller then falls back); a failure after which results are lost is returned as an error.
cl_int run_with_dop(cl_command_queue queue, const LaunchPlan& plan, Decision& d,
                    const std::vector<std::shared_ptr<BufferState>>& states, double wait_ms) {
  const auto t0 = Clock::now();
  DopState& s = dop_state();
  DopState::Entry& entry = *d.entry;
  // The buffers' states are held for the whole launch (dop launches run one at a time: this is the worker).
  std::lock_guard<std::mutex> entry_lock(entry.m);
  make_executor(s, entry, *d.spec, *plan.source,
                d.key);  // at the entry's first dop launch (synchronous: a failure falls back)
  bind_shape(*entry.exec, *d.spec);
  set_scalars(entry, plan);
  DeviceData* app_data = nullptr;
  Executor* in_app = in_app_executor(s, entry, queue, plan, app_data);
  Executor& exec = in_app ? *in_app : *entry.exec;
  const Spec& es = entry.exec->spec();
  std::vector<std::unique_lock<std::mutex>> held;
  {
    std::vector<BufferState*> order;
    for (const auto& st : states)
      if (st) order.push_back(st.get());
    std::sort(order.begin(), order.end());
    for (BufferState* st : order) held.emplace_back(st->m);
  }
  const std::vector<LaunchBytes> bytes = launch_bytes(entry);
  size_t fetched = 0;
  for (size_t i = 0; i < es.args.size(); ++i)
    if (states[i] && in_app)
      ready_for_engine(*states[i]);
    else if (states[i])
      fetched += fetch_for_dop(*states[i], queue, es.args[i].access != Access::read, bytes[i]);
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
  // In the application's memory: each buffer adopted with what is current where, and handed back with the engine's
  // record of it, which becomes the buffer's state (one record between launches: the BufferState).
  std::vector<char> adopted(es.args.size(), 0);
  size_t wrote = 0, lost = 0;
  auto hand_back = [&] {
    for (size_t i = 0; i < es.args.size(); ++i) {
      if (!adopted[i]) continue;
      const DeviceData::Copies c = app_data->release(entry.args[i]);
      lost += bytes_in(c.lost, 0, states[i]->size);
      wrote += engine_left(*states[i], queue, c.host, c.gpu);
      adopted[i] = 0;
    }
  };
  const auto t1 = Clock::now();
  LaunchResult r;
  try {
    for (size_t i = 0; in_app && i < es.args.size(); ++i)
      if (states[i]) {
        app_data->adopt(entry.args[i], states[i]->mem, states[i]->host_valid, app_current(*states[i]));
        adopted[i] = 1;
      }
    r = d.automatic ? exec.launch_auto(entry.args) : exec.launch(entry.args, d.config);
  } catch (const std::exception& e) {
    hand_back();
    for (size_t i = 0; i < es.args.size(); ++i)
      if (states[i]) give_back(i);
    const bool before_running = dynamic_cast<const cl::BuildError*>(&e) || dynamic_cast<const SpecError*>(&e) ||
                                dynamic_cast<const std::logic_error*>(&e);  // invalid_argument included
    if (dynamic_cast<const cl::BuildError*>(&e) || dynamic_cast<const SpecError*>(&e))
      remember_failure(s, entry, d.key, e.what());  // will not build or run for dop's devices: not tried again
    if (in_app && lost == 0) throw;  // every byte current in the application's buffer or dop's copy: it falls back
    if (before_running && !in_app) throw;
    bool lost_results = lost > 0;
    for (size_t i = 0; !in_app && i < es.args.size(); ++i)
      if (states[i] && es.args[i].access != Access::read && !dop_failed(*states[i])) lost_results = true;
    if (!lost_results) throw;  // the application's copies are current: the real launch runs
    log_line("kernel=" + plan.kernel_name + " error: dop failed after results were lost (" +
             (in_app ? std::to_string(lost) + " bytes written part way by both devices" : "earlier dop results") +
             "): " + e.what());
    return CL_OUT_OF_RESOURCES;
  }
  hand_back();
  for (size_t i = 0; i < es.args.size(); ++i)
    if (states[i]) {
      give_back(i);
      states[i]->with_dop = true;  // the application's next writes of it go to dop's copy (absorb_write)
    }
  d.config = r.config;
  ++entry.launches;
  const auto t2 = Clock::now();
  // dop's results stay where they were written (on dop's GPU: read back into dop's host copy by the engine); the
  // application's copies are stale where only dop's host copy holds them, until it needs them (eager buffers: now).
  // Without the application's memory: the bytes the footprint says the launch may write, every byte where it does
  // not bound the buffer.
  for (size_t i = 0; !in_app && i < es.args.size(); ++i) {
    if (!states[i] || es.args[i].access == Access::read) continue;
    const auto [lo, hi] = bytes[i].whole ? RangeSet::Range{0, states[i]->size} : bytes[i].write;
    if (lo >= hi) continue;
    dop_wrote(*states[i], queue, lo, hi);
    wrote += hi - lo;
  }
  if (in_app) fetched = r.d2h_bytes;  // the engine's reads from the application's buffers into dop's host copies
  const auto t3 = Clock::now();
  // The way's time, less the programs this launch built: paid once (and then from the cache on disk), they are not
  // what the way costs a launch.
  d.ran_ms = std::max(0.0, ms_between(timed_from(d, t1), t3) - r.build_ms);
  const cl_uint work_dim = cl_uint(d.spec->global.size());
  const size_t* global = d.spec->global.data();
  const size_t* local = d.spec->local.empty() ? nullptr : d.spec->local.data();
  if (log_enabled()) {
    std::string line = "kernel=" + plan.kernel_name + " global=" + dims(work_dim, global) +
                       " local=" + dims(work_dim, local) + " config=" + to_string(d.config);
    if (r.automatic)
      line += std::string(" auto=") + d.way + " decide_us=" + fmt_ms(d.decide_us) +
              (d.known_class ? " class=known" : " class=new") + data_words(d);
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
    line += std::string(" memory=") + memory_mode_name(r.memory) + (in_app ? " gpu_mem=app" : " gpu_mem=dop") +
            " fetched=" + std::to_string(fetched) + " wrote=" + std::to_string(wrote) +
            " h2d=" + std::to_string(r.h2d_bytes) + " d2h=" + std::to_string(r.d2h_bytes) +
            " in_ms=" + fmt_ms(wait_ms + ms_between(t0, t1)) + " dop_ms=" + fmt_ms(ms_between(t1, t2)) +
            " out_ms=" + fmt_ms(ms_between(t2, t3)) + " total_ms=" + fmt_ms(wait_ms + ms_between(t0, Clock::now()));
    if (d.async) line += " async=1";
    if (!r.note.empty()) line += " note=\"" + r.note + "\"";
    log_line(line);
  }
  return CL_SUCCESS;
}

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

}  // namespace

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
  // The job keeps its own reference to `after` until the user event is set: a failed status reaches `after` inside
  // clSetUserEventStatus, and an application woken by that (its wait returns) may release its reference meanwhile
  // (PoCL aborted in pocl_update_event_failed when that was the last one).
  if (event) {
    *event = after;
    clRetainEvent(after);
  }
  submit(s, [plan, d, states, side, ran, before, after]() mutable {
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
    clReleaseEvent(after);
  });
  return CL_SUCCESS;
}

}  // namespace dop::intercept

// The interposer's launches: clEnqueueNDRangeKernel and clEnqueueTask of the application. Each launch is decided
// first (DOP_CONFIG, or the model under DOP_CONFIG=auto) and then routed:
//   native    the decision is the application's own device in whole: the real enqueue, asynchronous as asked, after
//             any of dop's results its buffers still lack (residency.hpp);
//   dop       dop's co-execution engine on dop's devices, over dop's host copies of the buffers (fetched only where
//             they are not current), its results left there until the application needs them;
//   fallback  what dop cannot run: the real enqueue, with the reason in the log.
#include "launch.hpp"

namespace dop::intercept {
namespace {

size_t work_groups(cl_uint work_dim, const size_t* global, const size_t* local) {
  size_t n = 1;
  for (cl_uint d = 0; d < work_dim; ++d) n *= local ? global[d] / local[d] : global[d];
  return n;
}

// The real enqueue, after whatever of dop's results the kernel's buffers lack (and with dop's copies of what it may
// write dropped). `enqueue(n, list)` enqueues with the wait list given.
template <typename Enqueue>
cl_int enqueue_real(cl_command_queue queue, const KernelBuffers& kb, cl_uint num_events, const cl_event* wait_list,
                    const Enqueue& enqueue) {
  if (!any_buffer_state()) return enqueue(num_events, wait_list);  // nothing of dop's anywhere
  std::vector<cl_event> flushes;
  {
    Inside guard;
    before_real_kernel(queue, kb, flushes);
  }
  if (flushes.empty()) return enqueue(num_events, wait_list);
  const WaitList waits(num_events, wait_list, flushes);
  const cl_int r = enqueue(waits.size(), waits.data());
  release_events(flushes);
  return r;
}

void log_native(const LaunchPlan& plan, cl_uint work_dim, const size_t* global, const size_t* local, const Decision& d,
                cl_device_id dev, const cl::Selection& sel, double enqueue_ms, Clock::time_point entered) {
  if (!log_enabled()) return;
  const bool on_gpu = sel.gpu && dev == sel.gpu->device;
  const size_t groups = work_groups(work_dim, global, local);
  std::string line = "kernel=" + plan.kernel_name + " global=" + dims(work_dim, global) +
                     " local=" + dims(work_dim, local) + " config=" + to_string(d.config);
  if (d.automatic)
    line += std::string(" auto=") + d.way + (d.model ? std::string(" model=") + d.model : "") +
            " decide_us=" + fmt_ms(d.decide_us) + (d.known_class ? " class=known" : " class=new") + data_words(d);
  line += " route=native device=" + (on_gpu ? sel.gpu->id : sel.cpu->id);
  line += " cpu_wg=" + std::to_string(on_gpu ? 0 : groups) + " gpu_wg=" + std::to_string(on_gpu ? groups : 0);
  line += " enqueue_ms=" + fmt_ms(enqueue_ms) + " call_us=" + fmt_ms(ms_between(entered, Clock::now()) * 1e3);
  log_line(line);
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

// A launch the fast paths left: decided (from its class's memo, else by decide()), then run natively, with dop, or
// falling back. `real_enqueue` is the implementation's clEnqueueNDRangeKernel. Out of line, so that the fast paths
// do not set up what this needs.
[[gnu::noinline]] cl_int decide_and_launch(decltype(&::clEnqueueNDRangeKernel) real_enqueue,
                                           cl_command_queue command_queue, cl_kernel kernel, cl_uint work_dim,
                                           const size_t* global_work_offset, const size_t* global_work_size,
                                           const size_t* local_work_size, cl_uint num_events_in_wait_list,
                                           const cl_event* event_wait_list, cl_event* event,
                                           Clock::time_point entered) {
  auto real = [&](cl_uint n, const cl_event* list) {
    return real_enqueue(command_queue, kernel, work_dim, global_work_offset, global_work_size, local_work_size, n, list,
                        event);
  };
  LaunchPlan plan;
  std::string why;
  Decision d;
  LaunchScratch& scratch = launch_scratch();
  KernelBuffers& kb = scratch.buffers;
  bool known = false, key_made = false;
  try {
    Inside guard;
    known = decide_known_class(command_queue, kernel, work_dim, global_work_size, local_work_size, d, kb,
                               plan.kernel_name, key_made);
  } catch (...) {
    known = key_made = false;
  }
  auto plan_it = [&](bool& tracked, KernelBuffers* buffers) {
    try {
      why =
          plan_launch(kernel, work_dim, global_work_offset, global_work_size, local_work_size, plan, tracked, buffers);
    } catch (const std::exception& e) {
      why = e.what();
    } catch (...) {
      why = "unknown error";
    }
  };
  auto fallback = [&](const std::string& reason) {
    try {
      log_line("kernel=" + plan.kernel_name + " fallback: " + reason);
      clear_host_writes(kb);
    } catch (...) {
    }
    return enqueue_real(command_queue, kb, num_events_in_wait_list, event_wait_list, real);
  };
  if (!known) {
    bool tracked = false;
    plan_it(tracked, &kb);  // and the kernel's buffers, under the same hold of the tables
    // Every kernel the application creates is tracked: an untracked one is dop's own, on its driver threads.
    if (!tracked) return real(num_events_in_wait_list, event_wait_list);
    d = Decision{};
    try {
      Inside guard;
      const std::string cannot = decide(command_queue, kernel, plan, work_dim, global_work_size, local_work_size, kb,
                                        why, key_made ? &scratch.class_key : nullptr, d);
      if (!cannot.empty()) return fallback(cannot);
    } catch (...) {
      return fallback(why.empty() ? "dop failed: " + describe(std::current_exception()) : why);
    }
  }
  try {
    clear_host_writes(kb);  // this launch spends them
  } catch (...) {
  }
  if (d.native) {
    if (d.timed) clFinish(command_queue);  // a timed launch starts on an idle queue and is timed to its end
    if (!d.timed && !log_enabled())
      return enqueue_real(command_queue, kb, num_events_in_wait_list, event_wait_list, real);
    const auto t = Clock::now();
    const cl_int r = enqueue_real(command_queue, kb, num_events_in_wait_list, event_wait_list, real);
    if (d.timed && r == CL_SUCCESS && clFinish(command_queue) == CL_SUCCESS)
      d.ran_ms = ms_between(timed_from(d, t), Clock::now());
    try {
      Inside guard;
      if (d.prepare_dop && r == CL_SUCCESS) prepare_for_dop(kb);  // after the real kernel: it let go of dop's copies
      record_time(dop_state(), d);
      log_native(plan, work_dim, global_work_size, local_work_size, d, queue_device(command_queue), dop_state().sel,
                 ms_between(t, Clock::now()), entered);
    } catch (...) {
    }
    return r;
  }
  if (known) {  // a dop launch of a known class: the plan it needs, and the spec of its exact NDRange
    bool tracked = false;
    plan_it(tracked, nullptr);
    if (why.empty()) {
      try {
        Inside guard;
        shape_spec(kernel, work_dim, global_work_size, local_work_size, d);
      } catch (...) {
        return fallback("dop failed: " + describe(std::current_exception()));
      }
    }
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

}  // namespace

decltype(&::clEnqueueNDRangeKernel) real_enqueue_ndrange() {
  REAL(clEnqueueNDRangeKernel);
  return real_clEnqueueNDRangeKernel;
}

}  // namespace dop::intercept

using namespace dop::intercept;

DOP_EXPORT cl_int clEnqueueNDRangeKernel(cl_command_queue command_queue, cl_kernel kernel, cl_uint work_dim,
                                         const size_t* global_work_offset, const size_t* global_work_size,
                                         const size_t* local_work_size, cl_uint num_events_in_wait_list,
                                         const cl_event* event_wait_list, cl_event* event) {
  const auto real_clEnqueueNDRangeKernel = real_enqueue_ndrange();
  if (!real_clEnqueueNDRangeKernel) return CL_INVALID_OPERATION;
  auto real = [&] {
    return real_clEnqueueNDRangeKernel(command_queue, kernel, work_dim, global_work_offset, global_work_size,
                                       local_work_size, num_events_in_wait_list, event_wait_list, event);
  };
  if (t_inside) return real();
  const Clock::time_point entered = log_enabled() ? Clock::now() : Clock::time_point{};  // the log's call_us
  // The fast path: a fixed configuration that is the queue's device in whole, and no buffer dop ever ran with: nothing
  // to decide, flush or log.
  if (!log_enabled() && !any_buffer_state() && fixed_native(command_queue)) return real();
  // Under auto, the same: a launch whose class the thread saw decided on the queue's device, nothing changed since.
  if (native_again(command_queue, kernel, work_dim, global_work_size, local_work_size)) return real();
  return decide_and_launch(real_clEnqueueNDRangeKernel, command_queue, kernel, work_dim, global_work_offset,
                           global_work_size, local_work_size, num_events_in_wait_list, event_wait_list, event, entered);
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

// A plain run of a workload spec on one OpenCL device (dop/run_single.hpp).
#include "dop/run_single.hpp"

#include "dop/bounds.hpp"
#include "dop/guard.hpp"

namespace dop {

SingleRun run_single(const Spec& spec, const std::string& source, cl_device_id device, const Footprint& footprint) {
  check_device_limits(spec, spec.local, device);
  auto ctx = cl::create_context({device});
  auto q = cl::create_queue(ctx, device);
  auto prog = cl::build_program(ctx, {device}, source, spec.build_options + kArgInfoOption,
                                spec.kernel_file.empty() ? spec.name : spec.kernel_file);
  auto k = cl::create_kernel(prog, spec.kernel_name);
  cl_uint nargs = 0;
  cl::check(clGetKernelInfo(k.get(), CL_KERNEL_NUM_ARGS, sizeof(nargs), &nargs, nullptr), "clGetKernelInfo");
  if (nargs != spec.args.size())
    throw SpecError(spec.path + ": kernel '" + spec.kernel_name + "' has " + std::to_string(nargs) +
                    " arguments, the spec gives " + std::to_string(spec.args.size()));
  check_kernel_args(spec, k.get());

  SingleRun r;
  r.args = make_args(spec);
  check_footprint_bounds(spec, r.args, footprint, spec.local);
  // The device works on the arguments' own memory (guard pages behind it, dop/guard.hpp) where it can: a CPU device
  // then cannot run past a buffer into anyone else's memory.
  std::vector<cl::Buffer> bufs(spec.args.size());
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const ArgSpec& a = spec.args[i];
    switch (a.kind) {
      case ArgKind::buffer: {
        const cl_mem_flags acc = a.access == Access::read ? CL_MEM_READ_ONLY : CL_MEM_READ_WRITE;
        bufs[i] = cl::create_buffer(ctx, acc | CL_MEM_USE_HOST_PTR, a.bytes(), r.args[i].data());
        cl_mem m = bufs[i].get();
        set_spec_arg(spec, i, k, sizeof(cl_mem), &m);
        break;
      }
      case ArgKind::scalar:
        set_spec_arg(spec, i, k, a.bytes(), r.args[i].data());
        break;
      case ArgKind::local:
        set_spec_arg(spec, i, k, a.bytes(), nullptr);
        break;
    }
  }
  const LaunchGuard guard(spec, r.args, "plain run");
  auto ev = cl::enqueue_ndrange(q, k, spec.global, spec.local);
  r.kernel_ms = cl::event_times(ev).run_ms();
  // The outputs into the host memory the buffers use (mapping synchronises it; a read into the same bytes would
  // copy them onto themselves).
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const ArgSpec& a = spec.args[i];
    if (a.kind != ArgKind::buffer || a.access == Access::read) continue;
    cl_int err = CL_SUCCESS;
    void* p = clEnqueueMapBuffer(q.get(), bufs[i].get(), CL_TRUE, CL_MAP_READ, 0, a.bytes(), 0, nullptr, nullptr, &err);
    cl::check(err, "clEnqueueMapBuffer", "argument '" + a.name + "'");
    if (p != r.args[i].data()) std::memcpy(r.args[i].data(), p, a.bytes());
    cl::check(clEnqueueUnmapMemObject(q.get(), bufs[i].get(), p, 0, nullptr, nullptr), "clEnqueueUnmapMemObject",
              "argument '" + a.name + "'");
  }
  cl::finish(q);
  return r;
}

}  // namespace dop

// A plain run of a workload spec on one OpenCL device (dop/run_single.hpp).
#include "dop/run_single.hpp"

namespace dop {

SingleRun run_single(const Spec& spec, const std::string& source, cl_device_id device) {
  auto ctx = cl::create_context({device});
  auto q = cl::create_queue(ctx, device);
  auto prog = cl::build_program(ctx, {device}, source, spec.build_options,
                                spec.kernel_file.empty() ? spec.name : spec.kernel_file);
  auto k = cl::create_kernel(prog, spec.kernel_name);
  cl_uint nargs = 0;
  cl::check(clGetKernelInfo(k.get(), CL_KERNEL_NUM_ARGS, sizeof(nargs), &nargs, nullptr), "clGetKernelInfo");
  if (nargs != spec.args.size())
    throw SpecError(spec.path + ": kernel '" + spec.kernel_name + "' has " + std::to_string(nargs) +
                    " arguments, the spec gives " + std::to_string(spec.args.size()));

  SingleRun r;
  r.args = make_args(spec);
  std::vector<cl::Buffer> bufs(spec.args.size());
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const ArgSpec& a = spec.args[i];
    const cl_uint idx = static_cast<cl_uint>(i);
    switch (a.kind) {
      case ArgKind::buffer: {
        const cl_mem_flags acc = a.access == Access::read ? CL_MEM_READ_ONLY
                                 : a.access == Access::write
                                     ? CL_MEM_READ_WRITE  // write-only buffers still get their init
                                     : CL_MEM_READ_WRITE;
        bufs[i] = cl::create_buffer(ctx, acc | CL_MEM_COPY_HOST_PTR, a.bytes(), r.args[i].data());
        cl_mem m = bufs[i].get();
        cl::set_arg(k, idx, sizeof(cl_mem), &m);
        break;
      }
      case ArgKind::scalar:
        cl::set_arg(k, idx, a.bytes(), r.args[i].data());
        break;
      case ArgKind::local:
        cl::set_arg(k, idx, a.bytes(), nullptr);
        break;
    }
  }
  auto ev = cl::enqueue_ndrange(q, k, spec.global, spec.local);
  r.kernel_ms = cl::event_times(ev).run_ms();
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const ArgSpec& a = spec.args[i];
    if (a.kind != ArgKind::buffer || a.access == Access::read) continue;
    cl::check(clEnqueueReadBuffer(q.get(), bufs[i].get(), CL_TRUE, 0, a.bytes(), r.args[i].data(), 0, nullptr, nullptr),
              "clEnqueueReadBuffer", "argument '" + a.name + "'");
  }
  return r;
}

}  // namespace dop

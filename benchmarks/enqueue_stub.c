/* For benchmarks/intercept_overhead.sh's INTERCEPT_STUB=1: a clEnqueueNDRangeKernel that enqueues nothing and
 * returns at once, preloaded behind the interposer (which finds it as the next definition, dlsym(RTLD_NEXT)) and
 * under bench_enqueue alone. The timed calls are then the interposer's own work and a call, without the OpenCL
 * implementation's enqueue and the variance of its worker threads (PoCL's: about 0.3 us between runs on 2 cores). */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

cl_int clEnqueueNDRangeKernel(cl_command_queue queue, cl_kernel kernel, cl_uint work_dim, const size_t* offset,
                              const size_t* global, const size_t* local, cl_uint num_events, const cl_event* wait_list,
                              cl_event* event) {
  (void)queue;
  (void)kernel;
  (void)work_dim;
  (void)offset;
  (void)global;
  (void)local;
  (void)num_events;
  (void)wait_list;
  if (event) *event = NULL;
  return CL_SUCCESS;
}

/* For benchmarks/intercept_overhead.sh's INTERCEPT_STUB=1: a clEnqueueNDRangeKernel that enqueues nothing and
 * returns at once, preloaded behind the interposer (which finds it as the next definition, dlsym(RTLD_NEXT)) and
 * under bench_enqueue alone. The timed calls are then the interposer's own work and a call, without the OpenCL
 * implementation's enqueue and the variance of its worker threads (PoCL's: about 0.3 us between runs on 2 cores). */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdlib.h>

/* ENQUEUE_STUB_TOUCH_KB=N: each call writes one byte in every cache line of N KiB of memory of its own first, as a
 * real driver's enqueue leaves the caches (PoCL's or NVIDIA's touch hundreds of KiB): the interposer's own work is
 * then timed with its data as cold as a real enqueue leaves it. */
static unsigned char* touch_area(size_t* bytes) {
  static unsigned char* area = NULL;
  static size_t size = 0;
  static int read = 0;
  if (!read) {
    const char* kb = getenv("ENQUEUE_STUB_TOUCH_KB");
    size = kb ? (size_t)strtoul(kb, NULL, 10) * 1024 : 0;
    if (size) area = (unsigned char*)calloc(size, 1);
    if (!area) size = 0;
    read = 1;
  }
  *bytes = size;
  return area;
}

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
  size_t bytes = 0;
  unsigned char* area = touch_area(&bytes);
  for (size_t i = 0; i < bytes; i += 64) area[i]++;
  if (event) *event = NULL;
  return CL_SUCCESS;
}

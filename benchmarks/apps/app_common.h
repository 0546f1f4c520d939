/* What every application of benchmarks/apps/ shares: options, device choice, program building, timing, checksums
 * and the summary line. The applications know nothing of dop: plain C and OpenCL 1.2, as typical applications. */
#ifndef DOP_BENCH_APP_COMMON_H
#define DOP_BENCH_APP_COMMON_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stddef.h>
#include <stdint.h>

/* Exits with status 2 and the failing call, its error code and the line when an OpenCL call fails. */
#define CL_CHECK(call)                                           \
  do {                                                           \
    cl_int err_ = (call);                                        \
    if (err_ != CL_SUCCESS) app_cl_error(#call, err_, __LINE__); \
  } while (0)

/* A size parameter of an application: its value at --size small|medium|large, overridable with --NAME VALUE.
 * A switch (is_switch) takes no value: --NAME sets it to 1. */
typedef struct {
  const char* name;
  long by_size[3];
  const char* help;
  int is_switch;
  long value; /* set by app_init */
} app_param;

typedef struct {
  const char* name;      /* the application's name, first key of the summary line */
  const char* size;      /* small, medium, large or custom */
  const char* requested; /* the device asked for: gpu, cpu, first or default */
  char device_name[128];
  const char* device_type; /* gpu, cpu or other: what the chosen device is */
  cl_platform_id platform;
  cl_device_id device;
  cl_context context;
  cl_command_queue queue;
  char source_path[1024];
} app_t;

/* Parses argv (--size, --device, --source, --help and the application's parameters), chooses the device (APP_DEVICE
 * or --device: gpu, cpu or first; by default the first GPU of any platform, else the first device of the first
 * platform), creates a context and an in-order queue and says on stderr what it chose.
 * Exits with a usage message on bad input. */
void app_init(app_t* app, const char* name, const char* about, int argc, char** argv, app_param* params, int nparams);

/* A second queue on the application's device and context (out-of-order when asked). */
cl_command_queue app_queue(const app_t* app, int out_of_order);

/* Reads the application's kernel source (--source, else NAME.cl next to the executable) and builds it for the
 * application's device with `options`. Exits with the build log on failure. */
cl_program app_build(const app_t* app, const char* options);

cl_kernel app_kernel(cl_program program, const char* name);
cl_mem app_buffer(const app_t* app, cl_mem_flags flags, size_t bytes);

/* clSetKernelArg for arguments first .. first+count-1, from `count` pairs (size_t size, const void* value). */
void app_set_args(cl_kernel kernel, cl_uint first, cl_uint count, ...);

/* Releases `count` cl_mem objects. */
void app_release_buffers(int count, ...);

/* The start of a timed section: app_now_ms(), and the process's and this thread's CPU clocks (for app_finish's
 * submit_ms, cpu_ms and main_cpu_ms). */
double app_section_begin(void);

/* The end of a timed section begun at `t0_ms`: a blocking read of `bytes` of `buffer` into a new host array (the
 * caller frees it); sets *kernel_ms to the section's time. */
void* app_read_result(const app_t* app, cl_mem buffer, size_t bytes, double t0_ms, double* kernel_ms);

/* Milliseconds of a monotonic clock. */
double app_now_ms(void);

/* FNV-1a, 64 bits, over `bytes` bytes, continuing from `hash` (start with APP_HASH_INIT). */
#define APP_HASH_INIT 0xcbf29ce484222325ull
uint64_t app_hash(uint64_t hash, const void* data, size_t bytes);

/* A deterministic pseudo-random sequence (splitmix64). */
uint64_t app_random(uint64_t* state);

void* app_alloc(size_t bytes);

/* Prints the one summary line on stdout:
 *   app=NAME size=S device=D device_type=T requested=R launches=N kernel_ms=X check=ok|FAIL checksum=0x... exact=yes|no
 * followed, for a section begun by app_section_begin and ended by app_read_result, by
 *   submit_ms=S cpu_ms=C main_cpu_ms=M
 * (S: the section's time until its final read was asked for, i.e. what enqueueing its commands took; C: the CPU time of
 * every thread of the process over the section; M: the section's thread's own), and returns the process's exit status:
 * 0 when `ok`, 1 otherwise (the reason is the application's to print). */
int app_finish(const app_t* app, long launches, double kernel_ms, int ok, uint64_t checksum, int exact);

/* Prints the failing call and exits with status 2. */
void app_cl_error(const char* call, cl_int err, int line);

/* Prints "NAME: message" on stderr and exits with status 2 (bad input, resources). */
void app_die(const app_t* app, const char* fmt, ...);

#endif

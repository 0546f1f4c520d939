/* The shared part of the benchmarks/apps/ applications (app_common.h). */
#define _POSIX_C_SOURCE 200809L
#include "app_common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char* const kSizes[3] = {"small", "medium", "large"};

void app_cl_error(const char* call, cl_int err, int line) {
  fprintf(stderr, "OpenCL call failed: %s returned %d (line %d)\n", call, (int)err, line);
  exit(2);
}

void app_die(const app_t* app, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", app->name);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(2);
}

static void usage(const app_t* app, const char* about, const app_param* params, int nparams) {
  fprintf(stderr, "%s: %s\n\nusage: %s [--size small|medium|large] [--device gpu|cpu|first] [--source FILE.cl]",
          app->name, about, app->name);
  for (int i = 0; i < nparams; ++i) fprintf(stderr, params[i].is_switch ? " [--%s]" : " [--%s N]", params[i].name);
  fprintf(stderr,
          "\n\n  --size     preset sizes (default small)\n"
          "  --device   gpu: the first GPU of any platform; cpu: the first CPU device; first: the first device of the\n"
          "             first platform (default: APP_DEVICE, else the first GPU, else the first device)\n"
          "  --source   the kernel source (default: %s.cl next to the executable)\n",
          app->name);
  for (int i = 0; i < nparams; ++i)
    fprintf(stderr, "  --%-8s %s (small %ld, medium %ld, large %ld)\n", params[i].name, params[i].help,
            params[i].by_size[0], params[i].by_size[1], params[i].by_size[2]);
}

static long parse_count(const app_t* app, const char* option, const char* text) {
  char* end = NULL;
  errno = 0;
  const long v = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < 0)
    app_die(app, "%s takes a non-negative integer, not '%s'", option, text);
  return v;
}

/* The first device of `type` over all platforms (in platform order); 0 when there is none. */
static int find_device(cl_device_type type, cl_platform_id* platform, cl_device_id* device) {
  cl_uint np = 0;
  if (clGetPlatformIDs(0, NULL, &np) != CL_SUCCESS || np == 0) return 0;
  cl_platform_id* platforms = app_alloc(np * sizeof *platforms);
  CL_CHECK(clGetPlatformIDs(np, platforms, NULL));
  int found = 0;
  for (cl_uint p = 0; p < np && !found; ++p) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(platforms[p], type, 1, device, &nd) == CL_SUCCESS && nd > 0) {
      *platform = platforms[p];
      found = 1;
    }
  }
  free(platforms);
  return found;
}

static void choose_device(app_t* app) {
  const char* r = app->requested;
  int found = 0;
  if (strcmp(r, "cpu") == 0) {
    found = find_device(CL_DEVICE_TYPE_CPU, &app->platform, &app->device);
    if (!found) fprintf(stderr, "%s: no CPU device (asked for cpu): using the first device\n", app->name);
  } else if (strcmp(r, "gpu") == 0 || strcmp(r, "default") == 0) {
    found = find_device(CL_DEVICE_TYPE_GPU, &app->platform, &app->device);
    if (!found && strcmp(r, "gpu") == 0)
      fprintf(stderr, "%s: no GPU device (asked for gpu): using the first device\n", app->name);
  }
  if (!found) {
    cl_uint np = 0, nd = 0;
    if (clGetPlatformIDs(1, &app->platform, &np) != CL_SUCCESS || np == 0) app_die(app, "no OpenCL platform");
    if (clGetDeviceIDs(app->platform, CL_DEVICE_TYPE_ALL, 1, &app->device, &nd) != CL_SUCCESS || nd == 0)
      app_die(app, "the first OpenCL platform has no device");
  }
  CL_CHECK(clGetDeviceInfo(app->device, CL_DEVICE_NAME, sizeof app->device_name - 1, app->device_name, NULL));
  for (char* c = app->device_name; *c; ++c)
    if (*c == ' ' || *c == '\t' || *c == '=') *c = '_'; /* one token in the summary line */
  cl_device_type type = 0;
  CL_CHECK(clGetDeviceInfo(app->device, CL_DEVICE_TYPE, sizeof type, &type, NULL));
  app->device_type = (type & CL_DEVICE_TYPE_GPU) ? "gpu" : (type & CL_DEVICE_TYPE_CPU) ? "cpu" : "other";
}

static void default_source_path(app_t* app) {
  char exe[900];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) app_die(app, "cannot find the executable's folder (give --source FILE.cl)");
  exe[n] = '\0';
  char* slash = strrchr(exe, '/');
  if (slash) *slash = '\0';
  snprintf(app->source_path, sizeof app->source_path, "%s/%s.cl", exe, app->name);
}

void app_init(app_t* app, const char* name, const char* about, int argc, char** argv, app_param* params, int nparams) {
  memset(app, 0, sizeof *app);
  app->name = name;
  app->size = "small";
  const char* env_device = getenv("APP_DEVICE");
  app->requested = env_device && *env_device ? env_device : "default";
  int size_index = 0;
  for (int i = 0; i < nparams; ++i) params[i].value = -1;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(app, about, params, nparams);
      exit(0);
    }
    if (strncmp(a, "--", 2) != 0) {
      usage(app, about, params, nparams);
      app_die(app, "unexpected argument '%s'", a);
    }
    int matched = 0;
    for (int p = 0; p < nparams && !matched; ++p) {
      if (strcmp(a + 2, params[p].name) != 0) continue;
      matched = 1;
      if (params[p].is_switch) {
        params[p].value = 1;
      } else {
        if (i + 1 >= argc) app_die(app, "%s needs a value", a);
        params[p].value = parse_count(app, a, argv[++i]);
      }
    }
    if (matched) continue;
    if (strcmp(a, "--size") != 0 && strcmp(a, "--device") != 0 && strcmp(a, "--source") != 0) {
      usage(app, about, params, nparams);
      app_die(app, "unknown option '%s'", a);
    }
    if (i + 1 >= argc) app_die(app, "%s needs a value", a);
    const char* v = argv[++i];
    if (strcmp(a, "--size") == 0) {
      size_index = -1;
      for (int s = 0; s < 3; ++s)
        if (strcmp(v, kSizes[s]) == 0) size_index = s;
      if (size_index < 0) app_die(app, "--size is small, medium or large, not '%s'", v);
      app->size = kSizes[size_index];
    } else if (strcmp(a, "--device") == 0) {
      app->requested = v;
    } else {
      snprintf(app->source_path, sizeof app->source_path, "%s", v);
    }
  }
  if (strcmp(app->requested, "gpu") != 0 && strcmp(app->requested, "cpu") != 0 &&
      strcmp(app->requested, "first") != 0 && strcmp(app->requested, "default") != 0)
    app_die(app, "the device (APP_DEVICE or --device) is gpu, cpu or first, not '%s'", app->requested);
  for (int i = 0; i < nparams; ++i) {
    if (params[i].value >= 0 && !params[i].is_switch) app->size = "custom";
    if (params[i].value < 0) params[i].value = params[i].is_switch ? 0 : params[i].by_size[size_index];
  }
  if (!app->source_path[0]) default_source_path(app);

  choose_device(app);
  cl_int err = CL_SUCCESS;
  app->context = clCreateContext(NULL, 1, &app->device, NULL, NULL, &err);
  CL_CHECK(err);
  app->queue = app_queue(app, 0);
  fprintf(stderr, "%s: size %s, device %s (%s, asked for %s)\n", name, app->size, app->device_name, app->device_type,
          app->requested);
}

cl_command_queue app_queue(const app_t* app, int out_of_order) {
  cl_int err = CL_SUCCESS;
  const cl_command_queue_properties props = out_of_order ? CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE : 0;
  cl_command_queue q = clCreateCommandQueue(app->context, app->device, props, &err);
  if (err == CL_INVALID_QUEUE_PROPERTIES || err == CL_INVALID_VALUE)
    app_die(app, "the device %s has no out-of-order queues", app->device_name);
  CL_CHECK(err);
  return q;
}

static char* read_text(const app_t* app, const char* path, size_t* length) {
  FILE* f = fopen(path, "rb");
  if (!f) app_die(app, "cannot open the kernel source %s: %s", path, strerror(errno));
  size_t cap = 1 << 14, n = 0;
  char* text = app_alloc(cap);
  size_t got = 0;
  while ((got = fread(text + n, 1, cap - n - 1, f)) > 0) {
    n += got;
    if (n + 1 == cap) {
      cap *= 2;
      text = realloc(text, cap);
      if (!text) app_die(app, "out of memory reading %s", path);
    }
  }
  const int failed = ferror(f);
  fclose(f);
  if (failed) app_die(app, "cannot read %s", path);
  text[n] = '\0';
  *length = n;
  return text;
}

cl_program app_build(const app_t* app, const char* options) {
  size_t length = 0;
  char* source = read_text(app, app->source_path, &length);
  cl_int err = CL_SUCCESS;
  const char* sources[1] = {source};
  cl_program program = clCreateProgramWithSource(app->context, 1, sources, &length, &err);
  CL_CHECK(err);
  free(source);
  err = clBuildProgram(program, 1, &app->device, options, NULL, NULL);
  if (err != CL_SUCCESS) {
    char log[16384] = {0};
    clGetProgramBuildInfo(program, app->device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
    app_die(app, "building %s with '%s' failed (%d):\n%s", app->source_path, options, (int)err, log);
  }
  return program;
}

cl_kernel app_kernel(cl_program program, const char* name) {
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(program, name, &err);
  CL_CHECK(err);
  return k;
}

cl_mem app_buffer(const app_t* app, cl_mem_flags flags, size_t bytes) {
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(app->context, flags, bytes, NULL, &err);
  if (err == CL_INVALID_BUFFER_SIZE || err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES)
    app_die(app, "cannot allocate a buffer of %zu bytes on %s (error %d): use a smaller --size", bytes,
            app->device_name, (int)err);
  CL_CHECK(err);
  return m;
}

void app_set_args(cl_kernel kernel, cl_uint first, cl_uint count, ...) {
  va_list ap;
  va_start(ap, count);
  for (cl_uint i = 0; i < count; ++i) {
    const size_t size = va_arg(ap, size_t);
    const void* value = va_arg(ap, const void*);
    CL_CHECK(clSetKernelArg(kernel, first + i, size, value));
  }
  va_end(ap);
}

void app_release_buffers(int count, ...) {
  va_list ap;
  va_start(ap, count);
  for (int i = 0; i < count; ++i) CL_CHECK(clReleaseMemObject(va_arg(ap, cl_mem)));
  va_end(ap);
}

/* The section's clocks at app_section_begin and at its end (app_read_result); `ended` once it has ended. */
static struct {
  int ended;
  double wall, process_cpu, thread_cpu, submit_ms, cpu_ms, main_cpu_ms;
} g_section;

static double clock_ms(clockid_t clock) {
  struct timespec t;
  if (clock_gettime(clock, &t) != 0) return 0;
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

double app_section_begin(void) {
  g_section.ended = 0;
  g_section.process_cpu = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
  g_section.thread_cpu = clock_ms(CLOCK_THREAD_CPUTIME_ID);
  g_section.wall = app_now_ms();
  return g_section.wall;
}

void* app_read_result(const app_t* app, cl_mem buffer, size_t bytes, double t0_ms, double* kernel_ms) {
  void* host = app_alloc(bytes);
  const double submitted = app_now_ms();
  CL_CHECK(clEnqueueReadBuffer(app->queue, buffer, CL_TRUE, 0, bytes, host, 0, NULL, NULL));
  *kernel_ms = app_now_ms() - t0_ms;
  if (g_section.wall == t0_ms) {
    g_section.submit_ms = submitted - t0_ms;
    g_section.cpu_ms = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - g_section.process_cpu;
    g_section.main_cpu_ms = clock_ms(CLOCK_THREAD_CPUTIME_ID) - g_section.thread_cpu;
    g_section.ended = 1;
  }
  return host;
}

double app_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

uint64_t app_hash(uint64_t hash, const void* data, size_t bytes) {
  const unsigned char* p = data;
  for (size_t i = 0; i < bytes; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

uint64_t app_random(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void* app_alloc(size_t bytes) {
  void* p = malloc(bytes ? bytes : 1);
  if (!p) {
    fprintf(stderr, "out of memory: %zu bytes\n", bytes);
    exit(2);
  }
  return p;
}

int app_finish(const app_t* app, long launches, double kernel_ms, int ok, uint64_t checksum, int exact) {
  printf(
      "app=%s size=%s device=%s device_type=%s requested=%s launches=%ld kernel_ms=%.3f check=%s "
      "checksum=0x%016llx exact=%s",
      app->name, app->size, app->device_name, app->device_type, app->requested, launches, kernel_ms, ok ? "ok" : "FAIL",
      (unsigned long long)checksum, exact ? "yes" : "no");
  if (g_section.ended)
    printf(" submit_ms=%.3f cpu_ms=%.3f main_cpu_ms=%.3f", g_section.submit_ms, g_section.cpu_ms,
           g_section.main_cpu_ms);
  printf("\n");
  fflush(stdout);
  clReleaseCommandQueue(app->queue);
  clReleaseContext(app->context);
  return ok ? 0 : 1;
}

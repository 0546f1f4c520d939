// The program-binary cache (dop/program_cache.hpp): keys from the device and the build, entries as files with a
// checked header, atomic stores, a mirror in memory, and builds from binaries with a fall-back to the source.
#include "dop/program_cache.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include "dop/files.hpp"
#include "dop/hash.hpp"

namespace dop {
namespace {

namespace fs = std::filesystem;

// Raise when the key's contents or the entry layout change: older entries then miss (and are overwritten).
constexpr uint32_t kFormatVersion = 1;
constexpr char kMagic[8] = {'D', 'O', 'P', 'P', 'B', 'I', 'N', '\0'};

// The header of an entry file, followed by the key and the payload (the device's binary).
struct Header {
  char magic[8];
  uint32_t version;
  uint32_t reserved;
  uint64_t key_bytes, payload_bytes, checksum;
};

struct Stats {
  std::mutex m;
  ProgramCacheStats s;
  std::set<std::string> logged;  // kinds of problem already reported under DOP_LOG
  // The memory mirror: binaries by cache folder and key, so that a process builds a program once even where the
  // folder is unwritable.
  std::map<std::pair<std::string, std::string>, std::shared_ptr<const std::vector<unsigned char>>> memory;
};
Stats& state() {
  static Stats s;
  return s;
}

void log_once(const std::string& kind, const std::string& message) {
  const char* v = std::getenv("DOP_LOG");
  if (!v || !*v || std::string(v) == "0") return;
  {
    Stats& st = state();
    std::lock_guard<std::mutex> l(st.m);
    if (!st.logged.insert(kind).second) return;
  }
  std::fprintf(stderr, "dop: program cache: %s\n", message.c_str());
}

std::string device_info(cl_device_id d, cl_device_info what) {
  try {
    return cl::device_string(d, what);
  } catch (const cl::Error&) {
    return "?";
  }
}

// Everything a device's binary of `source` built with `options` depends on, as text.
std::string entry_key(cl_device_id d, const std::string& source, const std::string& options) {
  cl_platform_id p = nullptr;
  clGetDeviceInfo(d, CL_DEVICE_PLATFORM, sizeof p, &p, nullptr);
  std::string platform = "?";
  try {
    platform = cl::platform_string(p, CL_PLATFORM_NAME) + " | " + cl::platform_string(p, CL_PLATFORM_VERSION);
  } catch (const cl::Error&) {
  }
  return "dop program cache " + std::to_string(kFormatVersion) + "\nplatform: " + platform +
         "\ndevice: " + device_info(d, CL_DEVICE_NAME) + " | " + device_info(d, CL_DEVICE_VENDOR) + " | " +
         device_info(d, CL_DEVICE_VERSION) + "\ndriver: " + device_info(d, CL_DRIVER_VERSION) +
         "\nopencl c: " + device_info(d, CL_DEVICE_OPENCL_C_VERSION) + "\noptions: " + options +
         "\nsource bytes: " + std::to_string(source.size()) + "\n" + source;
}

std::string entry_path(const std::string& dir, const std::string& key) {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.bin", (unsigned long long)fnv1a64(key.data(), key.size()));
  return dir + "/" + name;
}

// 64-bit FNV-1a of key and payload (the file's name is that of the key alone).
uint64_t checksum(const std::string& key, const unsigned char* payload, size_t n) {
  return fnv1a64(payload, n, fnv1a64(key.data(), key.size()));
}

void reject(const std::string& path, const std::string& why) {
  std::error_code ec;
  fs::remove(path, ec);
  {
    Stats& st = state();
    std::lock_guard<std::mutex> l(st.m);
    ++st.s.rejected;
  }
  log_once("rejected", "ignored and removed " + path + " (" + why + "); the program is built from source");
}

// The payload of the entry at `path` for `key`; nothing on a miss. A corrupt entry is removed.
std::optional<std::vector<unsigned char>> load(const std::string& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Header h;
  if (bytes.size() < sizeof h) {
    reject(path, "shorter than its header");
    return std::nullopt;
  }
  std::memcpy(&h, bytes.data(), sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) {
    reject(path, "not a dop program-cache entry");
    return std::nullopt;
  }
  if (h.version != kFormatVersion) return std::nullopt;  // another dop's format: a miss, overwritten on store
  if (h.key_bytes > bytes.size() || h.payload_bytes > bytes.size() ||
      sizeof h + h.key_bytes + h.payload_bytes != bytes.size()) {
    reject(path, "truncated or of the wrong length");
    return std::nullopt;
  }
  const char* k = bytes.data() + sizeof h;
  const auto* payload = reinterpret_cast<const unsigned char*>(k + h.key_bytes);
  const std::string stored_key(k, h.key_bytes);
  if (checksum(stored_key, payload, h.payload_bytes) != h.checksum) {
    reject(path, "checksum mismatch");
    return std::nullopt;
  }
  if (stored_key != key) return std::nullopt;  // another build whose key hashes alike: a miss
  return std::vector<unsigned char>(payload, payload + h.payload_bytes);
}

bool write_all(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

// Writes the entry atomically: a temporary file in the same folder, fsync'd, renamed over the entry.
void store(const std::string& dir, const std::string& path, const std::string& key,
           const std::vector<unsigned char>& payload) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  static std::atomic<unsigned> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    log_once("unwritable", "cannot write to " + dir + " (" + std::strerror(errno) + "); binaries are not stored");
    return;
  }
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kFormatVersion;
  h.key_bytes = key.size();
  h.payload_bytes = payload.size();
  h.checksum = checksum(key, payload.data(), payload.size());
  const bool ok = write_all(fd, &h, sizeof h) && write_all(fd, key.data(), key.size()) &&
                  write_all(fd, payload.data(), payload.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    log_once("unwritable", "cannot write " + path + "; binaries are not stored");
    return;
  }
  Stats& st = state();
  std::lock_guard<std::mutex> l(st.m);
  ++st.s.stored;
}

using Binary = std::shared_ptr<const std::vector<unsigned char>>;

Binary lookup(const std::string& dir, const std::string& key) {
  Stats& st = state();
  {
    std::lock_guard<std::mutex> l(st.m);
    const auto it = st.memory.find({dir, key});
    if (it != st.memory.end()) return it->second;
  }
  auto payload = load(entry_path(dir, key), key);
  if (!payload) return nullptr;
  auto b = std::make_shared<const std::vector<unsigned char>>(std::move(*payload));
  std::lock_guard<std::mutex> l(st.m);
  st.memory[{dir, key}] = b;
  return b;
}

// The program made from binaries of every device, built; an empty handle when the driver refuses them.
cl::Program from_binaries(const cl::Context& ctx, const std::vector<cl_device_id>& devices,
                          const std::vector<Binary>& binaries, const std::string& options) {
  std::vector<size_t> sizes;
  std::vector<const unsigned char*> data;
  for (const auto& b : binaries) {
    sizes.push_back(b->size());
    data.push_back(b->data());
  }
  std::vector<cl_int> status(devices.size(), CL_SUCCESS);
  cl_int err = CL_SUCCESS;
  cl::Program p(clCreateProgramWithBinary(ctx.get(), cl_uint(devices.size()), devices.data(), sizes.data(), data.data(),
                                          status.data(), &err));
  if (err != CL_SUCCESS || !p) return {};
  for (cl_int s : status)
    if (s != CL_SUCCESS) return {};
  if (clBuildProgram(p.get(), cl_uint(devices.size()), devices.data(), options.c_str(), nullptr, nullptr) != CL_SUCCESS)
    return {};
  return p;
}

// Each of `devices`' binaries of a built program, in the order of `devices`; none when the program's devices are
// not those: an implementation may report others (PoCL 3.1 reports a sub-device's root device, and one device
// per root in a context of several), may leave the size of a device it did not build for unset, and may copy into
// a null pointer the specification says to skip. So binaries are read only where the program has exactly the
// devices asked for (or one device for one asked), each with a buffer of its reported size.
std::vector<std::vector<unsigned char>> binaries_of(const cl::Program& p, const std::vector<cl_device_id>& devices) {
  cl_uint n = 0;
  if (clGetProgramInfo(p.get(), CL_PROGRAM_NUM_DEVICES, sizeof n, &n, nullptr) != CL_SUCCESS || n != devices.size())
    return {};
  std::vector<cl_device_id> program_devices(n);
  if (clGetProgramInfo(p.get(), CL_PROGRAM_DEVICES, n * sizeof(cl_device_id), program_devices.data(), nullptr) !=
          CL_SUCCESS ||
      (n > 1 && program_devices != devices))
    return {};
  std::vector<size_t> sizes(n, 0);
  if (clGetProgramInfo(p.get(), CL_PROGRAM_BINARY_SIZES, n * sizeof(size_t), sizes.data(), nullptr) != CL_SUCCESS)
    return {};
  constexpr size_t kMaxBinary = size_t(1) << 30;
  std::vector<std::vector<unsigned char>> out(n);
  std::vector<unsigned char*> ptrs(n);
  for (cl_uint j = 0; j < n; ++j) {
    if (sizes[j] == 0 || sizes[j] > kMaxBinary) return {};
    out[j].resize(sizes[j]);
    ptrs[j] = out[j].data();
  }
  if (clGetProgramInfo(p.get(), CL_PROGRAM_BINARIES, n * sizeof(unsigned char*), ptrs.data(), nullptr) != CL_SUCCESS)
    return {};
  return out;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::string program_cache_dir() {
  const char* off = std::getenv("DOP_CACHE");
  if (off && std::string(off) == "0") return {};
  const std::string root = cache_root();
  return root.empty() ? root : root + "/programs";  // "": nowhere to keep it
}

ProgramCacheStats program_cache_stats() {
  Stats& st = state();
  std::lock_guard<std::mutex> l(st.m);
  return st.s;
}

CachedProgram build_program_cached(const cl::Context& ctx, const std::vector<cl_device_id>& devices,
                                   const std::string& source, const std::string& options, const std::string& file) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string dir = program_cache_dir();
  CachedProgram out;
  std::vector<std::string> keys;
  if (!dir.empty()) {
    std::vector<Binary> binaries;
    for (cl_device_id d : devices) {
      keys.push_back(entry_key(d, source, options));
      if (Binary b = lookup(dir, keys.back())) binaries.push_back(std::move(b));
    }
    if (binaries.size() == devices.size()) {
      out.program = from_binaries(ctx, devices, binaries, options);
      if (!out.program) {  // the driver refused them here: compile (and store what it builds over them)
        Stats& st = state();
        {
          std::lock_guard<std::mutex> l(st.m);
          for (const auto& k : keys) st.memory.erase({dir, k});
          ++st.s.rejected;
        }
        log_once("refused", "the driver refused a cached binary in " + dir + "; the program is built from source");
      }
    }
  }
  out.from_cache = bool(out.program);
  if (!out.program) {
    out.program = cl::build_program(ctx, devices, source, options, file);
    if (!dir.empty()) {
      const auto bins = binaries_of(out.program, devices);
      std::set<std::string> stored;
      for (size_t i = 0; i < bins.size(); ++i) {
        {
          Stats& st = state();
          std::lock_guard<std::mutex> l(st.m);
          st.memory[{dir, keys[i]}] = std::make_shared<const std::vector<unsigned char>>(bins[i]);
        }
        if (stored.insert(keys[i]).second) store(dir, entry_path(dir, keys[i]), keys[i], bins[i]);
      }
    }
  }
  out.ms = ms_since(t0);
  Stats& st = state();
  std::lock_guard<std::mutex> l(st.m);
  ++(out.from_cache ? st.s.from_cache : st.s.built);
  st.s.build_ms += out.ms;
  return out;
}

}  // namespace dop

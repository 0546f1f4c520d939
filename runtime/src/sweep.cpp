#include "dop/sweep.hpp"

#include <fcntl.h>
#include <unistd.h>
#if DOP_HAVE_ZLIB
#include <zlib.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "dop/run_single.hpp"

namespace dop {

// ---------------------------------------------------------------------------------------------------------------
// CSV
// ---------------------------------------------------------------------------------------------------------------

std::string csv_escape(const std::string& f) {
  if (f.find_first_of(",\"\n\r") == std::string::npos) return f;
  std::string o = "\"";
  for (char c : f) {
    if (c == '"') o += '"';
    o += (c == '\n' || c == '\r') ? ' ' : c;
  }
  return o + "\"";
}

std::vector<std::string> csv_split(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(std::move(cur));
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(std::move(cur));
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Columns
// ---------------------------------------------------------------------------------------------------------------

namespace {

const std::vector<std::string> kHead = {"platform_id", "workload", "set", "kernel"};
const std::vector<std::string> kLaunch = {"work_dim", "global_size", "local_size", "num_groups", "global_x", "global_y",
                                          "global_z", "local_x",  "local_y",    "local_z"};
const std::vector<std::string> kTail = {"cpu_util",        "gpu_util",         "cpu_cores",   "gpu_alloc",
                                        "gpu_throttled",   "time_ms_median",   "time_ms_min", "time_ms_max",
                                        "repeats",         "cpu_work_groups",  "gpu_work_groups", "cpu_chunks",
                                        "gpu_chunks",      "h2d_ms",           "d2h_ms",      "merge_ms",
                                        "wall_ms",         "valid",           "error"};

std::string fmt(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string config_key(double cpu, double gpu) { return fmt(cpu) + "," + fmt(gpu); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string basename_of(const std::string& p) {
  const auto s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

std::string join_line(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) line += (i ? "," : "") + csv_escape(fields[i]);
  return line + "\n";
}

// A dataset as read back: its header, its rows (raw lines) and their keys (platform|workload|cpu,gpu). A torn last
// line (no trailing newline: the writer was killed mid-line) is dropped, and cut from the file when `repair` is set.
struct Dataset {
  std::vector<std::string> header;
  std::vector<std::string> lines;
  std::vector<std::string> keys;
};

Dataset read_dataset(const std::string& path, bool repair, bool must_exist) {
  Dataset d;
  if (!must_exist && !std::ifstream(path)) return d;
  std::string all = read_text_file(path);
  if (!all.empty() && all.back() != '\n') {
    const auto last = all.find_last_of('\n');
    all.resize(last == std::string::npos ? 0 : last + 1);
    if (repair && ::truncate(path.c_str(), static_cast<off_t>(all.size())) != 0)
      throw std::runtime_error(path + ": cannot truncate its torn last line");
  }
  std::istringstream in(all);
  std::string line;
  size_t lineno = 0, ip = 0, iw = 0, ic = 0, ig = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    auto fields = csv_split(line);
    if (d.header.empty()) {
      d.header = fields;
      auto idx = [&](const char* name) {
        const auto it = std::find(d.header.begin(), d.header.end(), name);
        if (it == d.header.end()) throw std::runtime_error(path + ": line 1: no column '" + std::string(name) + "'");
        return size_t(it - d.header.begin());
      };
      ip = idx("platform_id");
      iw = idx("workload");
      ic = idx("cpu_util");
      ig = idx("gpu_util");
      continue;
    }
    if (fields.size() != d.header.size())
      throw std::runtime_error(path + ": line " + std::to_string(lineno) + ": " + std::to_string(fields.size()) +
                               " fields, the header has " + std::to_string(d.header.size()));
    d.keys.push_back(fields[ip] + "|" + fields[iw] + "|" + fields[ic] + "," + fields[ig]);
    d.lines.push_back(line);
  }
  return d;
}

// Appends whole lines with single write() calls and flushes them to the kernel: a kill -9 loses nothing written.
class Appender {
 public:
  explicit Appender(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error(path + ": cannot open for appending");
  }
  ~Appender() {
    if (fd_ >= 0) ::close(fd_);
  }
  Appender(const Appender&) = delete;
  Appender& operator=(const Appender&) = delete;
  // A line written is in the kernel's page cache: a killed process loses nothing. sync() also survives a crash of
  // the machine; the sweep calls it after each workload's rows.
  void write_line(const std::string& line) {
    size_t off = 0;
    while (off < line.size()) {
      const ssize_t n = ::write(fd_, line.data() + off, line.size() - off);
      if (n < 0) throw std::runtime_error(path_ + ": write failed");
      off += size_t(n);
    }
  }
  void sync() { ::fdatasync(fd_); }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace

std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": cannot be read");
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (all.size() < 2 || static_cast<unsigned char>(all[0]) != 0x1f || static_cast<unsigned char>(all[1]) != 0x8b)
    return all;
#if DOP_HAVE_ZLIB
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) throw std::runtime_error(path + ": cannot start gzip decompression");
  std::string out;
  z.next_in = reinterpret_cast<Bytef*>(all.data());
  z.avail_in = static_cast<uInt>(all.size());
  char buf[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      throw std::runtime_error(path + ": corrupt gzip data (byte " + std::to_string(z.total_in) + ")");
    }
    out.append(buf, sizeof buf - z.avail_out);
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) {
      inflateEnd(&z);
      throw std::runtime_error(path + ": truncated gzip data");
    }
  }
  inflateEnd(&z);
  return out;
#else
  throw std::runtime_error(path + ": is gzip-compressed, and this dop was built without zlib (install zlib1g-dev)");
#endif
}

std::vector<std::string> dataset_columns(const std::vector<std::string>& feature_names) {
  std::vector<std::string> c = kHead;
  c.insert(c.end(), feature_names.begin(), feature_names.end());
  c.insert(c.end(), kLaunch.begin(), kLaunch.end());
  c.insert(c.end(), kTail.begin(), kTail.end());
  return c;
}

std::vector<Workload> shard(std::vector<Workload> w, size_t index, size_t count) {
  if (count == 0 || index >= count)
    throw std::invalid_argument("shard " + std::to_string(index) + "/" + std::to_string(count) +
                                " must satisfy 0 <= I < N");
  std::sort(w.begin(), w.end(), [](const Workload& a, const Workload& b) { return a.spec.name < b.spec.name; });
  std::vector<Workload> out;
  for (size_t i = 0; i < w.size(); ++i)
    if (i % count == index) out.push_back(std::move(w[i]));
  return out;
}

SweepSummary run_sweep(const std::vector<Workload>& workloads, const cl::Selection& devices, const SweepOptions& o,
                       const SweepProgress& progress) {
  const auto columns = dataset_columns(o.feature_names);
  if (o.out.size() > 3 && o.out.compare(o.out.size() - 3, 3, ".gz") == 0)
    throw std::invalid_argument(o.out + ": a sweep appends to a plain CSV (compress it when the sweep is done)");
  const Dataset ex = read_dataset(o.out, true, false);
  const std::set<std::string> done_keys(ex.keys.begin(), ex.keys.end());
  if (!ex.header.empty() && ex.header != columns)
    throw std::runtime_error(o.out + ": has other columns than this sweep writes (a different feature list or an "
                             "older format): write to a new file");
  Appender out(o.out);
  if (ex.header.empty()) {
    out.write_line(join_line(columns));
    out.sync();
  }
  using SClock = std::chrono::steady_clock;
  const auto sweep_start = SClock::now();
  auto secs = [](SClock::time_point a) { return std::chrono::duration<double>(SClock::now() - a).count(); };

  auto configs = o.grid.configs();
  configs.erase(std::remove_if(configs.begin(), configs.end(),
                               [&](const Config& c) { return (c.cpu > 0 && !devices.cpu) || (c.gpu > 0 && !devices.gpu); }),
                configs.end());
  SweepSummary sum;
  // One executor per kernel: consecutive workloads of the same kernel (the sizes and work-group sizes of a program)
  // rebind it, so that contexts, sub-devices and programs are built once per kernel.
  std::unique_ptr<Executor> exec;
  std::string exec_key;
  const size_t total = workloads.size() * configs.size();
  size_t done = 0;
  for (const auto& w : workloads) {
    const Spec& s = w.spec;
    std::vector<std::string> todo_keys;
    std::vector<Config> todo;
    for (const auto& c : configs) {
      if (done_keys.count(o.platform_id + "|" + s.name + "|" + config_key(c.cpu, c.gpu))) {
        ++sum.rows_skipped;
        ++done;
      } else {
        todo.push_back(c);
      }
    }
    if (progress) progress(done, total, s.name);
    if (todo.empty()) continue;

    std::vector<std::string> feats;
    if (!o.feature_names.empty()) {
      const std::string key = basename_of(s.kernel_file) + ":" + s.kernel_name;
      const auto it = o.features.find(key);
      if (it == o.features.end())
        throw std::runtime_error("no code features for kernel '" + key + "' (workload " + s.name + ")");
      feats = it->second;
    }
    std::vector<std::string> base = {o.platform_id, s.name, w.set, s.kernel_name};
    base.insert(base.end(), feats.begin(), feats.end());
    const size_t wd = s.global.size();
    size_t local_items = 1;
    for (size_t l : s.local) local_items *= l;
    auto dim = [](const std::vector<size_t>& v, size_t d) { return d < v.size() ? std::to_string(v[d]) : "1"; };
    for (const auto& x : {std::to_string(wd), std::to_string(s.global_items()),
                          s.local.empty() ? std::string() : std::to_string(local_items),
                          s.local.empty() ? std::string() : std::to_string(s.work_groups()), dim(s.global, 0),
                          dim(s.global, 1), dim(s.global, 2), dim(s.local, 0), dim(s.local, 1), dim(s.local, 2)})
      base.push_back(x);

    // One executor per workload (programs and sub-devices built once); the reference computed once.
    auto since = SClock::now();  // the first configuration's wall time includes the setup
    std::string setup_error;
    std::vector<ArgData> want, initial, args;
    try {
      ExecutorOptions eo = o.executor;
      if (o.per_kernel) o.per_kernel(w, eo);
      const std::string key = s.kernel_name + '\n' + s.build_options + '\n' + std::to_string(s.global.size()) +
                              '\n' + w.source + '\n' + eo.malleable_source + '\n' + eo.malleable_note;
      bool rebound = false;
      if (exec && key == exec_key) {
        try {
          exec->rebind(s);
          rebound = true;
        } catch (const std::invalid_argument&) {  // a 3D kernel of another size: built anew
        }
      }
      if (!rebound) {
        exec.reset();
        exec = std::make_unique<Executor>(s, w.source, devices, eo);
        exec_key = key;
      }
      initial = make_args(s);  // generated once per workload; writable buffers are restored before every run
      args = exec->place(initial);  // in the executor's SVM in svm mode
      if (o.validate && !s.reference.empty()) {
        const ReferenceFn* ref = find_reference(s.reference);
        if (!ref) throw SpecError(s.path + ": reference '" + s.reference + "' is not registered in this build");
        want = initial;
        (*ref)(s, want);
      }
    } catch (const std::exception& e) {
      setup_error = e.what();
    }
    sum.setup_s += secs(since);
    for (const auto& c : todo) {
      std::vector<std::string> row = base;
      LaunchResult last;
      std::vector<double> times;
      std::string error = setup_error;
      bool valid = error.empty();
      if (valid) {
        try {
          for (int r = 0; r < o.warmup + o.repeat; ++r) {
            // Inputs are restored before every run; write-only outputs only before the validated run (a run
            // leaves them as the kernel wrote them, which does not change the next run's work).
            auto tr = SClock::now();
            reset_writable(args, initial, /*outputs=*/r == o.warmup);
            sum.reset_s += secs(tr);
            tr = SClock::now();
            last = exec->launch(args, c);
            const double launch_s = secs(tr);
            sum.timed_s += last.total_ms / 1e3;
            sum.launch_overhead_s += std::max(0.0, launch_s - last.total_ms / 1e3);
            if (r < o.warmup) continue;
            times.push_back(last.total_ms);
            if (r == o.warmup && o.validate) {
              const auto tv = SClock::now();
              if (want.empty()) {  // no CPU reference: a plain single-device run of the original kernel
                const cl_device_id d = devices.cpu ? devices.cpu->device : devices.gpu->device;
                want = run_single(s, w.source, d).args;
              }
              const auto cmp = compare_outputs(s, args, want);
              sum.validate_s += secs(tv);
              if (!cmp.ok) {
                valid = false;
                error = "output mismatch: " + std::to_string(cmp.mismatches) + " elements, first " + cmp.first;
                break;
              }
            }
          }
        } catch (const std::exception& e) {
          valid = false;
          error = e.what();
        }
      }
      const bool have = !times.empty();
      for (const auto& x :
           {fmt(c.cpu), fmt(c.gpu), std::to_string(last.cpu_cores), std::to_string(c.gpu > 0 ? last.gpu_alloc : 0),
            std::string(last.gpu_throttled ? "1" : "0"), have ? fmt(median(times)) : std::string(),
            have ? fmt(*std::min_element(times.begin(), times.end())) : std::string(),
            have ? fmt(*std::max_element(times.begin(), times.end())) : std::string(), std::to_string(times.size()),
            std::to_string(last.cpu.work_groups), std::to_string(last.gpu.work_groups),
            std::to_string(last.cpu.chunks), std::to_string(last.gpu.chunks), fmt(last.h2d_ms), fmt(last.d2h_ms),
            fmt(last.merge_ms), fmt(secs(since) * 1e3),
            std::string(valid ? "1" : "0"), error})
        row.push_back(x);
      since = SClock::now();
      out.write_line(join_line(row));
      sum.write_s += secs(since);
      ++sum.rows_written;
      if (!valid) ++sum.invalid;
      ++done;
      if (progress) progress(done, total, s.name);
    }
    const auto tw = SClock::now();
    out.sync();
    sum.write_s += secs(tw);
  }
  sum.wall_s = secs(sweep_start);
  return sum;
}

size_t merge_datasets(const std::vector<std::string>& inputs, const std::string& out_path) {
  if (inputs.empty()) throw std::invalid_argument("merge: no input datasets");
  std::vector<std::string> header;
  std::set<std::string> seen;
  std::string body;
  size_t rows = 0;
  for (const auto& in : inputs) {
    const Dataset d = read_dataset(in, false, true);
    if (d.header.empty()) continue;  // an empty shard
    if (header.empty()) header = d.header;
    if (d.header != header) throw std::runtime_error(in + ": its columns differ from " + inputs.front() + "'s");
    for (size_t i = 0; i < d.lines.size(); ++i)
      if (seen.insert(d.keys[i]).second) {
        body += d.lines[i] + "\n";
        ++rows;
      }
  }
  if (header.empty()) throw std::runtime_error("merge: every input dataset is empty");
  std::ofstream o(out_path, std::ios::binary | std::ios::trunc);
  if (!o) throw std::runtime_error(out_path + ": cannot be written");
  o << join_line(header) << body;
  if (!o) throw std::runtime_error(out_path + ": write failed");
  return rows;
}

}  // namespace dop

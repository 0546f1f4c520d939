#include "dop/spec.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <thread>

namespace dop {

using nlohmann::json;

// ---------------------------------------------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------------------------------------------

namespace {
struct TypeRow {
  ElemType t;
  const char* name;
  size_t size;
  bool is_float;
};
constexpr TypeRow kTypes[] = {{ElemType::i8, "char", 1, false},   {ElemType::u8, "uchar", 1, false},
                              {ElemType::i16, "short", 2, false}, {ElemType::u16, "ushort", 2, false},
                              {ElemType::i32, "int", 4, false},   {ElemType::u32, "uint", 4, false},
                              {ElemType::i64, "long", 8, false},  {ElemType::u64, "ulong", 8, false},
                              {ElemType::f32, "float", 4, true},  {ElemType::f64, "double", 8, true}};
const TypeRow& row(ElemType t) { return kTypes[static_cast<int>(t)]; }
}  // namespace

const char* type_name(ElemType t) { return row(t).name; }
size_t type_size(ElemType t) { return row(t).size; }
bool is_float(ElemType t) { return row(t).is_float; }
const char* kind_name(ArgKind k) {
  static const char* const kNames[] = {"buffer", "scalar", "local"};
  return kNames[int(k)];
}
ElemType parse_type(const std::string& name) {
  for (const auto& r : kTypes)
    if (name == r.name) return r.t;
  throw SpecError("unknown type '" + name +
                  "' (expected one of char uchar short ushort int uint long ulong float double)");
}

size_t Spec::global_items() const {
  size_t n = 1;
  for (size_t g : global) n *= g;
  return n;
}
size_t Spec::in_bytes() const {
  size_t n = 0;
  for (const ArgSpec& a : args)
    if (a.kind == ArgKind::buffer && a.access != Access::write) n += a.bytes();
  return n;
}
size_t Spec::out_bytes() const {
  size_t n = 0;
  for (const ArgSpec& a : args)
    if (a.kind == ArgKind::buffer && a.access != Access::read) n += a.bytes();
  return n;
}
size_t Spec::work_groups() const {
  if (local.empty()) return 0;
  size_t n = 1;
  for (size_t i = 0; i < global.size(); ++i) n *= global[i] / local[i];
  return n;
}

// ---------------------------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------------------------

namespace {

class Parser {
 public:
  explicit Parser(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& msg) const {
    throw SpecError(path_ + ": " + (field.empty() ? "" : field + ": ") + msg);
  }

  const json& require(const json& obj, const char* key, const std::string& where) const {
    if (!obj.is_object() || !obj.contains(key)) fail(where.empty() ? key : where + "." + key, "missing");
    return obj.at(key);
  }

  std::string str(const json& v, const std::string& field) const {
    if (!v.is_string()) fail(field, "must be a string");
    return v.get<std::string>();
  }

  double num(const json& v, const std::string& field) const {
    if (!v.is_number()) fail(field, "must be a number");
    return v.get<double>();
  }

  uint64_t uint(const json& v, const std::string& field, bool positive) const {
    if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)) {
      const uint64_t x = v.get<uint64_t>();
      if (positive && x == 0) fail(field, "must be a positive integer");
      return x;
    }
    fail(field, positive ? "must be a positive integer" : "must be a non-negative integer");
  }

  // An element count whose bytes fit in half the address space (beyond, no allocation can hold it).
  size_t count(const json& v, const std::string& field, ElemType t) const {
    const uint64_t n = uint(v, field, true);
    if (n > (SIZE_MAX / 2) / type_size(t))
      fail(field, std::to_string(n) + " elements of " + type_name(t) + " are more bytes than memory can hold");
    return size_t(n);
  }

  // A scalar's value within its type's range (no silent wrap-around: an int of 10^12).
  void scalar_in_range(const ArgSpec& a, const std::string& field) const {
    double lo = 0, hi = 0;
    switch (a.type) {
      case ElemType::i8:
        lo = INT8_MIN, hi = INT8_MAX;
        break;
      case ElemType::u8:
        hi = UINT8_MAX;
        break;
      case ElemType::i16:
        lo = INT16_MIN, hi = INT16_MAX;
        break;
      case ElemType::u16:
        hi = UINT16_MAX;
        break;
      case ElemType::i32:
        lo = INT32_MIN, hi = INT32_MAX;
        break;
      case ElemType::u32:
        hi = UINT32_MAX;
        break;
      case ElemType::i64:
        lo = -0x1p63, hi = 0x1p63;  // hi itself is out of range: checked below
        break;
      case ElemType::u64:
        hi = 0x1p64;
        break;
      case ElemType::f32:
        lo = -double(FLT_MAX), hi = double(FLT_MAX);
        break;
      case ElemType::f64:
        return;
    }
    const bool wide = a.type == ElemType::i64 || a.type == ElemType::u64;
    if (a.value < lo || a.value > hi || (wide && a.value >= hi)) {
      std::ostringstream os;
      os.precision(17);
      os << a.value << " is out of range for type " << type_name(a.type) << " [" << lo << ", " << hi
         << (wide ? ")" : "]");
      fail(field, os.str());
    }
  }

  std::vector<size_t> dims(const json& v, const std::string& field) const {
    if (!v.is_array() || v.empty() || v.size() > 3) fail(field, "must be an array of 1 to 3 positive integers");
    std::vector<size_t> d;
    for (size_t i = 0; i < v.size(); ++i) d.push_back(uint(v[i], field + "[" + std::to_string(i) + "]", true));
    return d;
  }

  ElemType type(const json& v, const std::string& field) const {
    try {
      return parse_type(str(v, field));
    } catch (const SpecError& e) {
      fail(field, e.what());
    }
  }

  Init init(const json& v, const std::string& field, ElemType t) const {
    Init in;
    if (!v.is_object()) fail(field, "must be an object");
    const std::string fill = v.contains("fill") ? str(v["fill"], field + ".fill") : "zero";
    auto opt_num = [&](const char* k, double def) { return v.contains(k) ? num(v[k], field + "." + k) : def; };
    auto seed = [&] { return v.contains("seed") ? uint(v["seed"], field + ".seed", false) : uint64_t(0); };
    if (fill == "zero") {
      in.fill = Init::Fill::zero;
    } else if (fill == "constant") {
      in.fill = Init::Fill::constant;
      in.value = num(require(v, "value", field), field + ".value");
    } else if (fill == "random") {
      in.fill = Init::Fill::random;
      in.seed = seed();
      in.min = opt_num("min", 0);
      in.max = opt_num("max", 1);
      if (!(in.max >= in.min)) fail(field, "random: max must be >= min");
      if (!is_float(t) && (in.min != std::floor(in.min) || in.max != std::floor(in.max)))
        fail(field, "random: min and max must be integers for an integer buffer");
    } else if (fill == "index") {
      in.fill = Init::Fill::index;
      in.start = opt_num("start", 0);
      in.step = opt_num("step", 1);
    } else if (fill == "permutation") {
      in.fill = Init::Fill::permutation;
      in.seed = seed();
      if (is_float(t)) fail(field, "permutation needs an integer buffer");
    } else if (fill == "random_index") {
      in.fill = Init::Fill::random_index;
      in.seed = seed();
      in.bound = uint(require(v, "bound", field), field + ".bound", true);
      if (is_float(t)) fail(field, "random_index needs an integer buffer");
    } else {
      fail(field + ".fill", "unknown fill '" + fill + "' (zero, constant, random, index, permutation, random_index)");
    }
    return in;
  }

  ArgSpec arg(const json& v, size_t i) const {
    const std::string f = "args[" + std::to_string(i) + "]";
    if (!v.is_object()) fail(f, "must be an object");
    ArgSpec a;
    a.name = v.contains("name") ? str(v["name"], f + ".name") : "arg" + std::to_string(i);
    const std::string kind = str(require(v, "kind", f), f + ".kind");
    a.type = type(require(v, "type", f), f + ".type");
    if (kind == "buffer") {
      a.kind = ArgKind::buffer;
      a.count = count(require(v, "count", f), f + ".count", a.type);
      if (v.contains("access")) {
        const std::string acc = str(v["access"], f + ".access");
        if (acc == "read")
          a.access = Access::read;
        else if (acc == "write")
          a.access = Access::write;
        else if (acc == "read_write")
          a.access = Access::read_write;
        else
          fail(f + ".access", "must be read, write or read_write");
      }
      if (v.contains("output")) {
        if (!v["output"].is_boolean()) fail(f + ".output", "must be true or false");
        a.output = v["output"].get<bool>();
      }
      if (a.output && a.access == Access::read) fail(f, "an output buffer cannot have access 'read'");
      if (v.contains("init")) a.init = init(v["init"], f + ".init", a.type);
    } else if (kind == "scalar") {
      a.kind = ArgKind::scalar;
      a.value = num(require(v, "value", f), f + ".value");
      if (!is_float(a.type) && a.value != std::floor(a.value))
        fail(f + ".value", "must be an integer for type " + std::string(type_name(a.type)));
      scalar_in_range(a, f + ".value");
    } else if (kind == "local") {
      a.kind = ArgKind::local;
      a.count = count(require(v, "count", f), f + ".count", a.type);
    } else {
      fail(f + ".kind", "must be buffer, scalar or local (got '" + kind + "')");
    }
    return a;
  }

 private:
  std::string path_;
};

std::string dirname_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

}  // namespace

Spec parse_spec(const std::string& text, const std::string& path) {
  Parser p(path);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    p.fail("", std::string("invalid JSON: ") + e.what());
  }
  if (!j.is_object()) p.fail("", "must be a JSON object");
  if (j.contains("format") && p.str(j["format"], "format") != "dop-spec/1")
    p.fail("format", "unsupported format '" + j["format"].get<std::string>() + "' (this dop reads dop-spec/1)");

  Spec s;
  s.path = path;
  s.name = j.contains("name") ? p.str(j["name"], "name") : std::string();
  const json& k = p.require(j, "kernel", "");
  const std::string file = p.str(p.require(k, "file", "kernel"), "kernel.file");
  s.kernel_file = (!file.empty() && file[0] == '/') ? file : dirname_of(path == "<spec>" ? "" : path) + file;
  s.kernel_name = p.str(p.require(k, "name", "kernel"), "kernel.name");
  if (k.contains("options")) s.build_options = p.str(k["options"], "kernel.options");
  if (s.name.empty()) s.name = s.kernel_name;

  s.global = p.dims(p.require(j, "global", ""), "global");
  if (j.contains("local") && !j["local"].is_null()) {
    s.local = p.dims(j["local"], "local");
    if (s.local.size() != s.global.size())
      p.fail("local",
             "has " + std::to_string(s.local.size()) + " dimensions, global has " + std::to_string(s.global.size()));
    for (size_t i = 0; i < s.global.size(); ++i)
      if (s.global[i] % s.local[i] != 0)
        p.fail("", "local[" + std::to_string(i) + "] = " + std::to_string(s.local[i]) + " does not divide global[" +
                       std::to_string(i) + "] = " + std::to_string(s.global[i]));
  }

  const json& args = p.require(j, "args", "");
  if (!args.is_array()) p.fail("args", "must be an array");
  for (size_t i = 0; i < args.size(); ++i) s.args.push_back(p.arg(args[i], i));

  if (j.contains("reference") && !j["reference"].is_null()) s.reference = p.str(j["reference"], "reference");
  if (j.contains("tolerance")) {
    const json& t = j["tolerance"];
    if (t.contains("rel")) s.tolerance.rel = p.num(t["rel"], "tolerance.rel");
    if (t.contains("abs")) s.tolerance.abs = p.num(t["abs"], "tolerance.abs");
    if (s.tolerance.rel < 0 || s.tolerance.abs < 0) p.fail("tolerance", "must be non-negative");
  }
  if (j.contains("meta")) {
    if (!j["meta"].is_object()) p.fail("meta", "must be an object of strings");
    for (auto it = j["meta"].begin(); it != j["meta"].end(); ++it)
      s.meta[it.key()] = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
  }
  return s;
}

Spec load_spec(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw SpecError(path + ": is a directory, not a spec file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw SpecError(path + ": cannot be read");
  std::ostringstream ss;
  ss << f.rdbuf();
  return parse_spec(ss.str(), path);
}

std::string spec_to_json(const Spec& s, const std::string& relative_to) {
  json j;
  j["format"] = "dop-spec/1";
  j["name"] = s.name;
  std::string file = s.kernel_file;
  if (!relative_to.empty()) {
    std::string base = relative_to;
    if (base.back() != '/') base += '/';
    if (file.compare(0, base.size(), base) == 0) file = file.substr(base.size());
  }
  j["kernel"] = {{"file", file}, {"name", s.kernel_name}};
  if (!s.build_options.empty()) j["kernel"]["options"] = s.build_options;
  j["global"] = s.global;
  j["local"] = s.local.empty() ? json(nullptr) : json(s.local);
  j["args"] = json::array();
  for (const auto& a : s.args) {
    json ja{{"name", a.name}, {"type", type_name(a.type)}};
    switch (a.kind) {
      case ArgKind::scalar:
        ja["kind"] = "scalar";
        if (is_float(a.type))
          ja["value"] = a.value;
        else
          ja["value"] = static_cast<int64_t>(a.value);
        break;
      case ArgKind::local:
        ja["kind"] = "local";
        ja["count"] = a.count;
        break;
      case ArgKind::buffer: {
        ja["kind"] = "buffer";
        ja["count"] = a.count;
        ja["access"] = a.access == Access::read ? "read" : a.access == Access::write ? "write" : "read_write";
        if (a.output) ja["output"] = true;
        const Init& in = a.init;
        switch (in.fill) {
          case Init::Fill::zero:
            break;
          case Init::Fill::constant:
            ja["init"] = {{"fill", "constant"}, {"value", in.value}};
            break;
          case Init::Fill::random:
            ja["init"] = {{"fill", "random"}, {"seed", in.seed}, {"min", in.min}, {"max", in.max}};
            break;
          case Init::Fill::index:
            ja["init"] = {{"fill", "index"}, {"start", in.start}, {"step", in.step}};
            break;
          case Init::Fill::permutation:
            ja["init"] = {{"fill", "permutation"}, {"seed", in.seed}};
            break;
          case Init::Fill::random_index:
            ja["init"] = {{"fill", "random_index"}, {"seed", in.seed}, {"bound", in.bound}};
            break;
        }
        break;
      }
    }
    j["args"].push_back(ja);
  }
  if (!s.reference.empty()) j["reference"] = s.reference;
  j["tolerance"] = {{"rel", s.tolerance.rel}, {"abs", s.tolerance.abs}};
  if (!s.meta.empty()) j["meta"] = s.meta;
  return j.dump(2) + "\n";
}

// ---------------------------------------------------------------------------------------------------------------
// Data
// ---------------------------------------------------------------------------------------------------------------

namespace {

uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Stores a double into element i of a typed buffer, with the conversion a C cast would do (values are in range by
// construction; out-of-range integer values wrap as in OpenCL's convert_* without saturation).
void store(ArgData& a, ElemType t, size_t i, double v) {
  switch (t) {
    case ElemType::i8:
      a.as<int8_t>()[i] = static_cast<int8_t>(static_cast<int64_t>(v));
      break;
    case ElemType::u8:
      a.as<uint8_t>()[i] = static_cast<uint8_t>(static_cast<int64_t>(v));
      break;
    case ElemType::i16:
      a.as<int16_t>()[i] = static_cast<int16_t>(static_cast<int64_t>(v));
      break;
    case ElemType::u16:
      a.as<uint16_t>()[i] = static_cast<uint16_t>(static_cast<int64_t>(v));
      break;
    case ElemType::i32:
      a.as<int32_t>()[i] = static_cast<int32_t>(static_cast<int64_t>(v));
      break;
    case ElemType::u32:
      a.as<uint32_t>()[i] = static_cast<uint32_t>(static_cast<int64_t>(v));
      break;
    case ElemType::i64:
      a.as<int64_t>()[i] = static_cast<int64_t>(v);
      break;
    case ElemType::u64:
      a.as<uint64_t>()[i] = v < 0 ? static_cast<uint64_t>(static_cast<int64_t>(v)) : static_cast<uint64_t>(v);
      break;
    case ElemType::f32:
      a.as<float>()[i] = static_cast<float>(v);
      break;
    case ElemType::f64:
      a.as<double>()[i] = v;
      break;
  }
}

void store_u64(ArgData& a, ElemType t, size_t i, uint64_t v) {
  switch (t) {
    case ElemType::i8:
    case ElemType::u8:
      a.as<uint8_t>()[i] = static_cast<uint8_t>(v);
      break;
    case ElemType::i16:
    case ElemType::u16:
      a.as<uint16_t>()[i] = static_cast<uint16_t>(v);
      break;
    case ElemType::i32:
    case ElemType::u32:
      a.as<uint32_t>()[i] = static_cast<uint32_t>(v);
      break;
    case ElemType::i64:
    case ElemType::u64:
      a.as<uint64_t>()[i] = v;
      break;
    case ElemType::f32:
      a.as<float>()[i] = static_cast<float>(v);
      break;
    case ElemType::f64:
      a.as<double>()[i] = static_cast<double>(v);
      break;
  }
}

double load(const ArgData& a, ElemType t, size_t i) {
  switch (t) {
    case ElemType::i8:
      return a.as<int8_t>()[i];
    case ElemType::u8:
      return a.as<uint8_t>()[i];
    case ElemType::i16:
      return a.as<int16_t>()[i];
    case ElemType::u16:
      return a.as<uint16_t>()[i];
    case ElemType::i32:
      return a.as<int32_t>()[i];
    case ElemType::u32:
      return a.as<uint32_t>()[i];
    case ElemType::i64:
      return static_cast<double>(a.as<int64_t>()[i]);
    case ElemType::u64:
      return static_cast<double>(a.as<uint64_t>()[i]);
    case ElemType::f32:
      return a.as<float>()[i];
    case ElemType::f64:
      return a.as<double>()[i];
  }
  return 0;
}

bool same_bits(const ArgData& a, const ArgData& b, size_t i, size_t sz) {
  return std::memcmp(static_cast<const char*>(a.data()) + i * sz, static_cast<const char*>(b.data()) + i * sz, sz) == 0;
}

}  // namespace

namespace {
// Runs f(begin, end) over [0, n) on up to hardware_concurrency threads for large n.
template <typename F>
void parallel_range(size_t n, F f) {
  const size_t threads = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), n / (1u << 20) + 1);
  if (threads <= 1) return f(size_t(0), n);
  std::vector<std::thread> ts;
  for (size_t t = 0; t < threads; ++t) ts.emplace_back(f, n * t / threads, n * (t + 1) / threads);
  for (auto& t : ts) t.join();
}
}  // namespace

void reset_writable(std::vector<ArgData>& args, const std::vector<ArgData>& initial, bool outputs) {
  if (args.size() != initial.size()) throw std::invalid_argument("reset_writable: argument lists differ");
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgSpec* s = initial[i].spec;
    if (!s || s->kind != ArgKind::buffer || s->access == Access::read) continue;
    if (s->access == Access::write && !outputs) continue;
    if (args[i].storage.size() != initial[i].storage.size())
      throw std::invalid_argument("reset_writable: sizes differ");
    copy_bytes(args[i].storage.data(), initial[i].storage.data(), args[i].storage.size() * sizeof(uint64_t));
  }
}

void copy_bytes(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  parallel_range(bytes, [&](size_t b, size_t e) {
    std::memcpy(static_cast<unsigned char*>(dst) + b, static_cast<const unsigned char*>(src) + b, e - b);
  });
}

void fill_buffer(ArgData& a, const Init& in) {
  const ArgSpec& s = *a.spec;
  const size_t n = s.count;
  const ElemType t = s.type;
  const uint64_t base = splitmix64(in.seed);
  switch (in.fill) {
    case Init::Fill::zero:
      std::fill(a.storage.begin(), a.storage.end(), 0);
      break;
    case Init::Fill::constant:
      parallel_range(n, [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) store(a, t, i, in.value);
      });
      break;
    case Init::Fill::random:
      if (is_float(t)) {
        const double span = in.max - in.min;
        parallel_range(n, [&](size_t b, size_t e) {
          for (size_t i = b; i < e; ++i) store(a, t, i, in.min + double(splitmix64(base + i) >> 11) * 0x1.0p-53 * span);
        });
      } else {
        const int64_t lo = static_cast<int64_t>(in.min);
        const uint64_t range = static_cast<uint64_t>(static_cast<int64_t>(in.max) - lo) + 1;
        parallel_range(n, [&](size_t b, size_t e) {
          for (size_t i = b; i < e; ++i) {
            const uint64_t r = range == 0 ? splitmix64(base + i) : splitmix64(base + i) % range;
            store_u64(a, t, i, static_cast<uint64_t>(lo) + r);
          }
        });
      }
      break;
    case Init::Fill::index:
      parallel_range(n, [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) store(a, t, i, in.start + double(i) * in.step);
      });
      break;
    case Init::Fill::permutation: {
      std::vector<uint64_t> p(n);
      std::iota(p.begin(), p.end(), uint64_t(0));
      for (size_t i = n; i-- > 1;) std::swap(p[i], p[splitmix64(base + i) % (i + 1)]);
      for (size_t i = 0; i < n; ++i) store_u64(a, t, i, p[i]);
      break;
    }
    case Init::Fill::random_index:
      parallel_range(n, [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) store_u64(a, t, i, splitmix64(base + i) % in.bound);
      });
      break;
  }
}

namespace {
// Empty storage for an argument of `kind`: a buffer's in `memory`, anything else's in host memory.
decltype(ArgData::storage) storage_for(ArgKind kind, const std::shared_ptr<ArgMemory>& memory) {
  return decltype(ArgData::storage)(PageAlignedAllocator<uint64_t>(kind == ArgKind::buffer ? memory : nullptr));
}
}  // namespace

std::vector<ArgData> make_args(const Spec& spec, const std::shared_ptr<ArgMemory>& memory) {
  std::vector<ArgData> out(spec.args.size());
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const ArgSpec& s = spec.args[i];
    ArgData& a = out[i];
    a.spec = &s;
    if (s.kind == ArgKind::local) continue;
    a.bytes = s.bytes();
    a.storage = storage_for(s.kind, memory);
    try {
      a.storage.assign((a.bytes + 7) / 8, 0);
    } catch (const std::bad_alloc&) {
      throw SpecError((spec.path.empty() ? spec.name : spec.path) + ": args[" + std::to_string(i) +
                      "].count: " + std::to_string(a.bytes) + " bytes for '" + s.name + "' cannot be allocated");
    }
    if (s.kind == ArgKind::scalar)
      store(a, s.type, 0, s.value);
    else
      fill_buffer(a, s.init);
  }
  return out;
}

std::vector<ArgData> copy_args(const std::vector<ArgData>& args, const std::shared_ptr<ArgMemory>& memory) {
  std::vector<ArgData> out(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    out[i].spec = args[i].spec;
    out[i].bytes = args[i].bytes;
    out[i].storage = storage_for(args[i].spec ? args[i].spec->kind : ArgKind::scalar, memory);
    out[i].storage.assign(args[i].storage.begin(), args[i].storage.end());
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// References
// ---------------------------------------------------------------------------------------------------------------

namespace {
std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, ReferenceFn>& registry() {
  static std::map<std::string, ReferenceFn> r;
  return r;
}
}  // namespace

void register_reference(const std::string& name, ReferenceFn fn) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[name] = std::move(fn);
}

const ReferenceFn* find_reference(const std::string& name) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto& r = registry();
  auto it = r.find(name);
  if (it != r.end()) return &it->second;
  const auto colon = name.find(':');
  if (colon != std::string::npos) {
    it = r.find(name.substr(0, colon + 1));  // family registration "prefix:"
    if (it != r.end()) return &it->second;
  }
  return nullptr;
}

std::vector<ArgData> run_reference(const Spec& spec) {
  if (spec.reference.empty()) throw SpecError(spec.path + ": no reference given for workload '" + spec.name + "'");
  const ReferenceFn* fn = find_reference(spec.reference);
  if (!fn) throw SpecError(spec.path + ": reference '" + spec.reference + "' is not registered in this build");
  auto args = make_args(spec);
  (*fn)(spec, args);
  return args;
}

Comparison compare_outputs(const Spec& spec, const std::vector<ArgData>& got, const std::vector<ArgData>& want) {
  Comparison c;
  if (got.size() != spec.args.size() || want.size() != spec.args.size())
    throw std::invalid_argument("compare_outputs: argument lists do not match the spec of '" + spec.name + "'");
  for (size_t k = 0; k < spec.args.size(); ++k) {
    const ArgSpec& s = spec.args[k];
    if (s.kind != ArgKind::buffer || !s.output) continue;
    const size_t sz = type_size(s.type);
    // Ranges compared by several threads; bitwise-equal ranges (the common case) are skipped with one memcmp.
    std::mutex m;
    size_t mismatches = 0, first = SIZE_MAX;
    double max_err = 0;
    parallel_range(s.count, [&](size_t b, size_t e) {
      const auto* gb = static_cast<const unsigned char*>(got[k].data());
      const auto* wb = static_cast<const unsigned char*>(want[k].data());
      if (std::memcmp(gb + b * sz, wb + b * sz, (e - b) * sz) == 0) return;
      size_t n = 0, f = SIZE_MAX;
      double me = 0;
      for (size_t i = b; i < e; ++i) {
        bool bad;
        if (is_float(s.type)) {
          const double g = load(got[k], s.type, i), w = load(want[k], s.type, i);
          const double err = std::fabs(g - w);
          // NaN in both places is a match; NaN in one is not.
          bad = std::isnan(g) != std::isnan(w) ||
                (!std::isnan(g) && !(err <= spec.tolerance.abs + spec.tolerance.rel * std::fabs(w)));
          if (!std::isnan(err)) me = std::max(me, err);
        } else {
          bad = !same_bits(got[k], want[k], i, sz);
        }
        if (bad) {
          f = std::min(f, i);
          ++n;
        }
      }
      std::lock_guard<std::mutex> l(m);
      mismatches += n;
      first = std::min(first, f);
      max_err = std::max(max_err, me);
    });
    c.max_abs_err = std::max(c.max_abs_err, max_err);
    if (mismatches > 0 && c.mismatches == 0) {
      std::ostringstream os;
      os.precision(9);
      os << s.name << "[" << first << "]: got " << load(got[k], s.type, first) << ", want "
         << load(want[k], s.type, first);
      c.first = os.str();
    }
    c.mismatches += mismatches;
  }
  c.ok = c.mismatches == 0;
  return c;
}

std::string read_kernel_source(const Spec& spec) {
  std::ifstream f(spec.kernel_file, std::ios::binary);
  if (!f)
    throw SpecError((spec.path.empty() ? spec.name : spec.path) + ": kernel.file '" + spec.kernel_file +
                    "' cannot be read");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::map<std::string, int64_t> integer_scalars(const Spec& spec, const std::vector<ArgData>& args) {
  std::map<std::string, int64_t> out;
  for (size_t i = 0; i < spec.args.size() && i < args.size(); ++i) {
    const ArgSpec& a = spec.args[i];
    if (a.kind != ArgKind::scalar || is_float(a.type) || args[i].storage.empty()) continue;
    int64_t v = 0;
    switch (a.type) {
      case ElemType::i8:
        v = *args[i].as<int8_t>();
        break;
      case ElemType::u8:
        v = *args[i].as<uint8_t>();
        break;
      case ElemType::i16:
        v = *args[i].as<int16_t>();
        break;
      case ElemType::u16:
        v = *args[i].as<uint16_t>();
        break;
      case ElemType::i32:
        v = *args[i].as<int32_t>();
        break;
      case ElemType::u32:
        v = *args[i].as<uint32_t>();
        break;
      default:
        v = *args[i].as<int64_t>();
        break;
    }
    out[a.name] = v;
  }
  return out;
}

std::map<std::string, int64_t> integer_scalars(const Spec& spec) {
  // The scalars alone, stored as make_args stores them (no buffer is allocated): the same values a launch passes.
  std::vector<ArgData> args(spec.args.size());
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const ArgSpec& a = spec.args[i];
    if (a.kind != ArgKind::scalar) continue;
    args[i].spec = &a;
    args[i].bytes = a.bytes();
    args[i].storage = storage_for(a.kind, nullptr);
    args[i].storage.assign((args[i].bytes + 7) / 8, 0);
    store(args[i], a.type, 0, a.value);
  }
  return integer_scalars(spec, args);
}

void check_signature(const Spec& spec, const std::vector<KernelParam>& params) {
  const std::string where = spec.origin();
  if (spec.args.size() != params.size())
    throw SpecError(where + ": args: kernel '" + spec.kernel_name + "' has " + std::to_string(params.size()) +
                    " arguments, the spec gives " + std::to_string(spec.args.size()));
  for (size_t i = 0; i < params.size(); ++i) {
    const ArgSpec& a = spec.args[i];
    const KernelParam& p = params[i];
    const std::string field = "args[" + std::to_string(i) + "]";
    if (a.kind != p.kind)
      throw SpecError(where + ": " + field + ".kind: '" + a.name + "' is a " + kind_name(a.kind) +
                      " in the spec, the kernel '" + spec.kernel_name + "' takes a " + kind_name(p.kind) + " there");
    if (a.kind != ArgKind::scalar || p.type.empty()) continue;
    ElemType t;
    try {
      t = parse_type(p.type);
    } catch (const SpecError&) {
      continue;  // a typedef or a vector type: not one of the spec's types, nothing to compare
    }
    if (spec.typed_scalars ? t != a.type : type_size(t) != type_size(a.type))
      throw SpecError(where + ": " + field + ".type: '" + a.name + "' is " + type_name(a.type) +
                      " in the spec, the kernel '" + spec.kernel_name + "' takes " + p.type +
                      " there (its bits would be read as another type)");
  }
}

}  // namespace dop

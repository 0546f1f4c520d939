// features/: the per-argument memory footprint (docs/features.md, "Memory footprint"). Exact cases are evaluated
// by the runtime that consumes them (dop::footprint_ranges) and compared with hand-computed byte ranges; the real
// kernels of kernels/ must give well-formed footprints.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dop/features.hpp"
#include "dop/runtime.hpp"
#include "footprint_eval.hpp"
#include "support.hpp"

using dop::test::chunk_values;
using json = nlohmann::ordered_json;

namespace {

/// The JSON of the one kernel of `source` (or the named one).
json kernel_json(const std::string& source, const std::string& kernel = "") {
  dop::features::Options o;
  o.kernel = kernel;
  const auto r = dop::features::analyze(source, "k.cl", o);
  REQUIRE(r.kernels.size() == 1);
  return json::parse(dop::features::to_json(r.kernels[0]));
}

/// Bytes [lo, hi] (inclusive; empty when hi < lo).
struct ByteRange {
  int64_t lo = 0, hi = -1;
  bool empty() const { return hi < lo; }
};

/// What the runtime (dop::footprint_ranges) computes from the kernel's footprint for the launch and chunk in `v`
/// (chunk_values: global and local sizes, the split dimension's gid range, and the integer scalar arguments by
/// name): the bytes of `arg` that its reads (want_write false), writes (true) or both (nullopt) may touch. Buffers
/// are sized so that nothing is clamped.
ByteRange footprint_range(const json& kernel, const std::string& arg, const std::map<std::string, int64_t>& v,
                          std::optional<bool> want_write = std::nullopt) {
  const dop::Footprint fp = dop::parse_footprint(kernel.dump(), "test kernel");
  dop::Spec spec;
  std::vector<size_t> local;
  const auto dims = size_t(v.at("work_dim"));
  for (size_t d = 0; d < dims; ++d) {
    spec.global.push_back(size_t(v.at("global_size_" + std::to_string(d))));
    local.push_back(size_t(v.at("local_size_" + std::to_string(d))));
  }
  for (const auto& a : kernel.at("args")) {
    dop::ArgSpec s;
    s.name = a.at("name").get<std::string>();
    s.kind = a.at("pointer").get<bool>() ? dop::ArgKind::buffer : dop::ArgKind::scalar;
    s.type = s.kind == dop::ArgKind::buffer ? dop::ElemType::u8 : dop::ElemType::i64;
    s.count = size_t(1) << 40;
    spec.args.push_back(s);
  }
  std::vector<dop::ArgData> args(spec.args.size());
  size_t index = spec.args.size();
  for (size_t i = 0; i < spec.args.size(); ++i) {
    args[i].spec = &spec.args[i];
    if (spec.args[i].name == arg) index = i;
    const auto it = v.find(spec.args[i].name);
    if (spec.args[i].kind == dop::ArgKind::scalar && it != v.end()) args[i].storage.assign(1, uint64_t(it->second));
  }
  REQUIRE(index < spec.args.size());
  const std::string sd = std::to_string(dims - 1);
  const auto r = dop::footprint_ranges(fp, spec, args, local, size_t(v.at("gid_lo_" + sd)),
                                       size_t(v.at("gid_hi_" + sd)) + 1)[index];
  REQUIRE(r.read);  // bounded
  dop::ByteRange b = want_write ? (*want_write ? *r.write : *r.read) : *r.read;
  if (!want_write && !r.write->empty())
    b = b.empty() ? *r.write : dop::ByteRange{std::min(b.lo, r.write->lo), std::max(b.hi, r.write->hi)};
  return b.empty() ? ByteRange{} : ByteRange{b.lo, b.hi - 1};
}

const json& fp_arg(const json& k, const std::string& arg) { return k.at("footprint").at("args").at(arg); }
bool whole(const json& k, const std::string& arg) { return fp_arg(k, arg).at("whole").get<bool>(); }

void check_range(const json& k, const std::string& arg, const std::map<std::string, int64_t>& v, int64_t lo, int64_t hi,
                 std::optional<bool> write = std::nullopt) {
  INFO(k.at("footprint").dump());
  INFO("argument " << arg);
  REQUIRE_FALSE(whole(k, arg));
  const ByteRange r = footprint_range(k, arg, v, write);
  CHECK(r.lo == lo);
  CHECK(r.hi == hi);
}

// Launch and chunk names for a 1D launch of 64 work-items in groups of 16, chunk gid [lo, hi].
std::map<std::string, int64_t> launch64_chunk(int64_t lo, int64_t hi) {
  const int64_t g[3] = {64, 1, 1}, l[3] = {16, 1, 1};
  return chunk_values(1, g, l, lo, hi);
}

}  // namespace

TEST_CASE("footprint: 1D c[i] = a[i] + b[i] has exact terms") {
  const json k = kernel_json(R"X(
__kernel void vadd(__global const float* a, __global const float* b, __global float* c, int n) {
  int i = get_global_id(0);
  if (i < n) c[i] = a[i] + b[i];
})X");
  INFO(k.at("footprint").dump());
  const json want_a = json::parse(R"X({"whole": false, "accesses": [{"write": false, "bytes": 4,
                                      "terms": [[4, "get_global_id(0)"]],
                                      "guards": [["get_global_id(0)", "<=", "n - 1"]]}]})X");
  CHECK(fp_arg(k, "a") == want_a);
  CHECK(fp_arg(k, "c").at("accesses").at(0).at("write") == true);
  CHECK(k.at("footprint").at("ranges") == json::parse(R"X({"get_global_id(0)": ["gid_lo_0", "gid_hi_0"]})X"));
  const int64_t g[3] = {1024, 1, 1}, l[3] = {64, 1, 1};
  const auto v = chunk_values(1, g, l, 100, 199);
  check_range(k, "a", v, 400, 799);
  check_range(k, "b", v, 400, 799);
  check_range(k, "c", v, 400, 799, true);
  CHECK(footprint_range(k, "c", v, false).empty());  // c is only written
  // Not a model feature: the CSV does not have it.
  CHECK(dop::features::csv_header().find("footprint") == std::string::npos);
}

TEST_CASE("footprint: 2D GEMM with a k loop (i = get_global_id(1))") {
  for (const bool real : {false, true}) {
    const json k = real ? kernel_json(dop::test::read_file(std::string(DOP_SOURCE_DIR) + "/kernels/gemm/gemm.cl"))
                        : kernel_json(R"X(
__kernel void gemm(__global const float* A, __global const float* B, __global float* C, int ni, int nj, int nk) {
  int j = get_global_id(0), i = get_global_id(1);
  if (i >= ni || j >= nj) return;
  float acc = 0.0f;
  for (int k = 0; k < nk; k++) acc += A[i * nk + k] * B[k * nj + j];
  C[i * nj + j] = acc;
})X");
    INFO(k.at("footprint").dump(2));
    const int64_t g[3] = {32, 64, 1}, l[3] = {8, 8, 1};
    auto v = chunk_values(2, g, l, 10, 19);
    v["ni"] = 64;
    v["nj"] = 32;
    v["nk"] = 16;
    check_range(k, "A", v, 10 * 16 * 4, (19 * 16 + 15) * 4 + 3);
    check_range(k, "B", v, 0, (15 * 32 + 31) * 4 + 3);
    check_range(k, "C", v, 10 * 32 * 4, (19 * 32 + 31) * 4 + 3);
    if (real) std::cout << "kernels/gemm footprint:\n" << k.at("footprint").dump(2) << "\n";
  }
}

TEST_CASE("footprint: row pointer arithmetic is an offset from the argument") {
  const json k = kernel_json(R"X(
__kernel void rows(__global const float* A, __global float* out, int n) {
  int i = get_global_id(0);
  __global const float* row = A + i * n;
  float s = 0.0f;
  for (int j = 0; j < n; ++j) s += row[j];
  __global float* o = out;
  o += i;
  *o = s;
})X");
  const int64_t g[3] = {100, 1, 1}, l[3] = {10, 1, 1};
  auto v = chunk_values(1, g, l, 20, 29);
  v["n"] = 100;
  check_range(k, "A", v, 20 * 100 * 4, (29 * 100 + 99) * 4 + 3);
  check_range(k, "out", v, 80, 119);
}

TEST_CASE("footprint: accesses in a helper function count for the kernel argument") {
  const json k = kernel_json(R"X(
float get(__global const float* p, int k) { return p[k]; }
void put(__global float* q, int k, float x) { q[2 * k] = x; }
__kernel void helper(__global const float* in, __global float* out) {
  int i = get_global_id(0);
  put(out, i, get(in, i + 1));
})X");
  const auto v = launch64_chunk(0, 9);
  check_range(k, "in", v, 4, 43);
  check_range(k, "out", v, 0, 75);
}

TEST_CASE("footprint: vload4 and vstore4 move the whole vector") {
  const json k = kernel_json(R"X(
__kernel void vec(__global const float* a, __global float* b) {
  int i = get_global_id(0);
  float4 x = vload4(i, a);
  vstore4(x * 2.0f, i + 1, b);
})X");
  CHECK(fp_arg(k, "a").at("accesses").at(0).at("bytes") == 16);
  const auto v = launch64_chunk(2, 3);
  check_range(k, "a", v, 32, 63);
  check_range(k, "b", v, 48, 79);
}

TEST_CASE("footprint: a loaded index makes the argument whole, the index array stays exact") {
  const json k = kernel_json(R"X(
__kernel void gather(__global const float* a, __global const int* idx, __global float* b) {
  int i = get_global_id(0);
  b[i] = a[idx[i]];
})X");
  CHECK(whole(k, "a"));
  CHECK(fp_arg(k, "a").at("why").get<std::string>().find("loaded") != std::string::npos);
  CHECK(fp_arg(k, "a").at("why").get<std::string>().find("k.cl:4") == 0);
  const auto v = launch64_chunk(5, 6);
  check_range(k, "idx", v, 20, 27);
  check_range(k, "b", v, 20, 27);
}

TEST_CASE("footprint: a loop with an unknown trip count makes the arguments it indexes whole") {
  const json k = kernel_json(R"X(
__kernel void scan(__global const float* a, __global int* b) {
  int i = get_global_id(0);
  int k = i;
  while (a[k] > 0.0f) k++;
  b[i] = k;
})X");
  CHECK(whole(k, "a"));
  CHECK(fp_arg(k, "a").at("why").get<std::string>().find("unknown trip count") != std::string::npos);
  CHECK_FALSE(whole(k, "b"));
}

TEST_CASE("footprint: a pointer chosen by a condition makes both arguments whole") {
  const json k = kernel_json(R"X(
__kernel void choose(__global float* a, __global float* b, __global float* c, int n) {
  int i = get_global_id(0);
  __global float* p = i < n ? a : b;
  p[i] = 1.0f;
})X");
  CHECK(whole(k, "a"));
  CHECK(whole(k, "b"));
  CHECK_FALSE(whole(k, "c"));
  CHECK(fp_arg(k, "c").at("accesses").empty());
}

TEST_CASE("footprint: a 3D kernel split along dimension 2") {
  const json k = kernel_json(R"X(
__kernel void copy3(__global const float* in, __global float* out, int nx, int ny) {
  int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
  out[(z * ny + y) * nx + x] = 2.0f * in[(z * ny + y) * nx + x];
})X");
  const int64_t g[3] = {8, 4, 6}, l[3] = {4, 2, 1};
  auto v = chunk_values(3, g, l, 3, 4);
  v["nx"] = 8;
  v["ny"] = 4;
  check_range(k, "in", v, (3 * 4 * 8) * 4, ((4 * 4 + 3) * 8 + 7) * 4 + 3);
  check_range(k, "out", v, (3 * 4 * 8) * 4, ((4 * 4 + 3) * 8 + 7) * 4 + 3);
}

TEST_CASE("footprint: group id times local size plus local id") {
  const json k = kernel_json(R"X(
__kernel void grp(__global const int* in, __global int* out) {
  int i = get_group_id(0) * get_local_size(0) + get_local_id(0);
  out[i] = in[i] + 1;
})X");
  INFO(k.at("footprint").dump());
  CHECK(k.at("footprint").at("ranges").at("group_id_0") == json::array({"group_lo_0", "group_hi_0"}));
  CHECK(k.at("footprint").at("ranges").at("get_local_id(0)") == json::array({"0", "local_size_0-1"}));
  const int64_t g[3] = {512, 1, 1}, l[3] = {64, 1, 1};
  const auto v = chunk_values(1, g, l, 128, 255);  // groups 2..3
  check_range(k, "in", v, 512, 1023);
  check_range(k, "out", v, 512, 1023);
}

TEST_CASE("footprint: an atomic is a read and a write") {
  const json k = kernel_json(R"X(
__kernel void count(__global const int* in, __global int* counts) {
  int i = get_global_id(0);
  if (in[i] > 0) atomic_inc(&counts[get_group_id(0)]);
})X");
  const int64_t g[3] = {256, 1, 1}, l[3] = {64, 1, 1};
  const auto v = chunk_values(1, g, l, 64, 191);  // groups 1..2
  check_range(k, "counts", v, 4, 11, true);
  check_range(k, "counts", v, 4, 11, false);
}

TEST_CASE("footprint: a trip count that depends on the work-item is bounded over the chunk") {
  const json k = kernel_json(R"X(
__kernel void tail(__global const float* a, __global float* s, int n) {
  int i = get_global_id(0);
  float acc = 0.0f;
  for (int k = i; k < n; k++) acc += a[k];
  for (int k = i; k < n; k += get_global_size(0)) acc += a[k];
  s[i] = acc;
})X");
  auto v = launch64_chunk(10, 19);
  v["n"] = 100;
  INFO(k.at("footprint").dump());
  REQUIRE_FALSE(whole(k, "a"));
  const ByteRange r = footprint_range(k, "a", v);
  CHECK(r.lo <= 40);   // a[10]
  CHECK(r.hi >= 399);  // a[99]
  CHECK(r.hi <= 4 * 200);
}

TEST_CASE("footprint: quotients by constants, unknown control flow and escapes") {
  SECTION("i / 4 and i % 4 fold back; a lone i / 4 is bounded") {
    const json k = kernel_json(R"X(
__kernel void q(__global float* a, __global float* b) {
  int i = get_global_id(0);
  int r = i / 4, c = i % 4;
  a[r * 4 + c] = 0.0f;
  b[r] = 1.0f;
})X");
    const auto v = launch64_chunk(8, 15);
    check_range(k, "a", v, 32, 63);
    check_range(k, "b", v, 8, 15);
  }
  SECTION("a continue that may skip the induction update") {
    const json k = kernel_json(R"X(
__kernel void c(__global const float* a, __global float* b, int n) {
  int k = 0, j = 0;
  while (k < n) {
    j++;
    b[j] = 0.0f;
    if (a[k] > 0.0f) continue;
    k++;
  }
})X");
    CHECK(whole(k, "b"));
  }
  SECTION("goto makes everything whole") {
    const json k = kernel_json(R"X(
__kernel void g(__global float* a, int n) {
  int i = get_global_id(0);
again:
  a[i] = 0.0f;
  i += 1;
  if (i < n) goto again;
})X");
    CHECK(whole(k, "a"));
  }
  SECTION("a narrowing conversion makes everything whole") {
    const json k = kernel_json(R"X(
__kernel void n8(__global float* a) {
  uchar i = get_global_id(0);
  a[i] = 0.0f;
})X");
    CHECK(whole(k, "a"));
  }
  SECTION("a pointer passed to a builtin that writes through it") {
    const json k = kernel_json(R"X(
__kernel void f(__global float* a, __global float* b) {
  int i = get_global_id(0);
  a[i] = fract(b[i], &a[i + 1]);
})X");
    CHECK(whole(k, "a"));
    CHECK_FALSE(whole(k, "b"));
  }
  SECTION("a store through a pointer to a variable forgets its value") {
    const json k = kernel_json(R"X(
__kernel void p(__global float* a, __global const int* x) {
  int i = get_global_id(0);
  int* pi = &i;
  i = 3;
  *pi = x[0];
  a[i] = 0.0f;
})X");
    CHECK(whole(k, "a"));
  }
  SECTION("a __local pointer argument is in the footprint (local ids), private memory is not") {
    const json k = kernel_json(R"X(
__kernel void l(__global float* a, __local float* tmp) {
  int i = get_local_id(0);
  tmp[i] = a[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  a[get_global_id(0)] = tmp[get_local_size(0) - 1 - i];
})X");
    CHECK_FALSE(whole(k, "tmp"));
    const json& acc = k.at("footprint").at("args").at("tmp").at("accesses");
    REQUIRE(acc.size() == 2);  // the store tmp[i] and the load tmp[local_size - 1 - i], 4 bytes each
    CHECK(acc[0] == json({{"write", true}, {"bytes", 4}, {"terms", {{4, "get_local_id(0)"}}}}));
    CHECK(acc[1].at("write") == false);
    CHECK(k.at("footprint").at("ranges").at("get_local_id(0)") == json::array({"0", "local_size_0-1"}));
    CHECK_FALSE(whole(k, "a"));
  }
}

TEST_CASE("footprint: every real kernel and every test kernel has a well-formed footprint") {
  int kernels = 0;
  std::vector<std::filesystem::path> files;
  for (const char* sub : {"/kernels", "/tests/data/features"})
    for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(DOP_SOURCE_DIR) + sub))
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    const std::filesystem::directory_entry e(path);
    if (e.path().extension() != ".cl") continue;
    const auto r = dop::features::analyze(dop::test::read_file(e.path().string()), e.path().string());
    const json j = json::parse(dop::features::to_json(r, e.path().string()));
    for (const auto& k : j.at("kernels")) {
      ++kernels;
      INFO(k.at("kernel").get<std::string>() << ": " << k.at("footprint").dump());
      CHECK(dop::test::footprint_problem(k, dop::test::generic_values(k)) == "");
      for (const auto& [name, a] : k.at("footprint").at("args").items())
        if (a.at("whole").get<bool>())
          std::cout << "whole: " << k.at("kernel").get<std::string>() << "." << name << ": "
                    << a.at("why").get<std::string>() << "\n";
    }
  }
  CHECK(kernels >= 40);
}

TEST_CASE("footprint: printf does not make the arguments whole") {
  const json k = kernel_json(R"X(
__kernel void dbg(__global float* a) {
  int i = get_global_id(0);
  printf("%d %f\n", i, a[i]);
  a[i] = 0.0f;
})X");
  CHECK_FALSE(whole(k, "a"));
}

TEST_CASE("footprint: accesses some work-items may not make are `may`, simple guards are kept") {
  const json k = kernel_json(R"X(
__kernel void k(__global float* a, __global float* b, __global float* c, __global float* d, int n, int m) {
  int i = get_global_id(0);
  int j = get_global_id(1);
  if (i < 1 || i >= n - 1 || j >= m) return;
  a[i] = 0.0f;                                   // guarded by the early return: 1 <= i <= n-2, j <= m-1
  int o = get_group_id(0) * 4 + j;
  if (o < n) b[o] = 1.0f;                        // a condition on a value that is not an id: may
  for (int t = 0; t < n; t++) {
    if (c[t] > 0.0f) break;                      // a loop that may exit early: may
  }
  for (int t = i; t < n; t++) d[t] = 0.0f;       // a trip count that varies with the work-item: may
  for (int t = 0; t < m; t++) d[t * n] = 1.0f;   // a uniform trip count: certain
  if (j > 0) d[j] = n > 2 ? d[j - 1] : 0.0f;     // a guard on an id (j >= 1) is kept; under ?:: may
  else d[j + 1] = 0.0f;                           // the else of a guard: may
})X");
  INFO(k.at("footprint").dump());
  const json a = fp_arg(k, "a").at("accesses").at(0);
  CHECK(!a.contains("may"));
  CHECK(a.at("guards") == json::parse(R"J([["get_global_id(0)", ">=", "1"], ["get_global_id(0)", "<=", "n - 2"],
                                         ["get_global_id(1)", "<=", "m - 1"]])J"));
  CHECK(fp_arg(k, "b").at("accesses").at(0).at("may") == true);
  CHECK(fp_arg(k, "c").at("accesses").at(0).at("may") == true);
  size_t certain = 0, may = 0;
  for (const auto& x : fp_arg(k, "d").at("accesses")) (x.value("may", false) ? may : certain)++;
  CHECK(certain == 2);  // d[t * n], d[j]
  CHECK(may == 3);      // d[t], d[j - 1], d[j + 1]
  for (const auto& x : fp_arg(k, "d").at("accesses"))
    if (x.at("terms") == json::parse(R"J([[4, "get_global_id(1)"]])J"))  // d[j]: the early return's and its own
      CHECK(x.at("guards").back() == json::parse(R"J(["get_global_id(1)", ">=", "1"])J"));
  // A return in a guarded branch: what follows runs only for the work-items outside the guard.
  const json r = kernel_json(R"X(
__kernel void r(__global float* a, __global float* b, int n) {
  int i = get_global_id(0);
  if (i < n) { a[i] = 0.0f; return; }
  b[i] = 1.0f;
})X");
  INFO(r.at("footprint").dump());
  CHECK(fp_arg(r, "a").at("accesses").at(0).at("guards").size() == 1);
  CHECK(fp_arg(r, "b").at("accesses").at(0).at("may") == true);
}

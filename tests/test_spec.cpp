// Workload specs: parsing with named errors, deterministic data, references, comparison, single-device runs.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <vector>

#include "dop/run_single.hpp"
#include "dop/spec.hpp"

using namespace dop;

namespace {

const char* kSaxpySource = R"CL(
__kernel void saxpy(__global float* y, __global const float* x, float a, int n) {
  int i = get_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
)CL";

std::string saxpy_json(const std::string& extra = "") {
  return R"({"format":"dop-spec/1","name":"saxpy_test","kernel":{"file":"saxpy.cl","name":"saxpy"},
    "global":[1024],"local":[64],
    "args":[{"name":"y","kind":"buffer","type":"float","count":1000,"access":"read_write","output":true,
             "init":{"fill":"random","seed":1,"min":-1,"max":1}},
            {"name":"x","kind":"buffer","type":"float","count":1000,"access":"read",
             "init":{"fill":"random","seed":2,"min":0,"max":2}},
            {"name":"a","kind":"scalar","type":"float","value":2.5},
            {"name":"n","kind":"scalar","type":"int","value":1000}],
    "reference":"test:saxpy")" +
         extra + "}";
}

void saxpy_reference(const Spec&, std::vector<ArgData>& args) {
  float* y = args[0].as<float>();
  const float* x = args[1].as<float>();
  const float a = *args[2].as<float>();
  const int n = *args[3].as<int>();
  for (int i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}

Spec with_arg(const std::string& arg_json) {
  return parse_spec(R"({"kernel":{"file":"k.cl","name":"k"},"global":[8],"args":[)" + arg_json + "]}", "t.json");
}

}  // namespace

TEST_CASE("a spec parses with every field") {
  const Spec s =
      parse_spec(saxpy_json(R"(,"tolerance":{"rel":1e-3,"abs":0},"meta":{"set":"test","k":3})"), "specs/saxpy.json");
  CHECK(s.name == "saxpy_test");
  CHECK(s.kernel_file == "specs/saxpy.cl");  // relative to the spec's folder
  CHECK(s.kernel_name == "saxpy");
  CHECK(s.global == std::vector<size_t>{1024});
  CHECK(s.local == std::vector<size_t>{64});
  CHECK(s.work_groups() == 16);
  REQUIRE(s.args.size() == 4);
  CHECK(s.args[0].output);
  CHECK(s.args[1].access == Access::read);
  CHECK(s.args[2].kind == ArgKind::scalar);
  CHECK(s.args[2].value == 2.5);
  CHECK(s.tolerance.rel == 1e-3);
  CHECK(s.meta.at("set") == "test");
  CHECK(s.meta.at("k") == "3");
}

TEST_CASE("spec_to_json round-trips") {
  const Spec a = parse_spec(saxpy_json(), "dir/x.json");
  const Spec b = parse_spec(spec_to_json(a, "dir"), "dir/x.json");
  CHECK(b.kernel_file == a.kernel_file);
  CHECK(b.global == a.global);
  CHECK(b.local == a.local);
  REQUIRE(b.args.size() == a.args.size());
  for (size_t i = 0; i < a.args.size(); ++i) {
    CHECK(b.args[i].name == a.args[i].name);
    CHECK(b.args[i].count == a.args[i].count);
    CHECK(b.args[i].value == a.args[i].value);
    CHECK(int(b.args[i].init.fill) == int(a.args[i].init.fill));
    CHECK(b.args[i].init.seed == a.args[i].init.seed);
  }
  CHECK(b.reference == a.reference);
}

TEST_CASE("spec errors name the file and the field") {
  CHECK_THROWS_WITH(parse_spec("{", "bad.json"), Catch::StartsWith("bad.json: invalid JSON"));
  CHECK_THROWS_WITH(parse_spec(R"({"global":[8],"args":[]})", "a.json"), Catch::Contains("a.json: kernel: missing"));
  CHECK_THROWS_WITH(
      parse_spec(R"({"kernel":{"file":"k.cl","name":"k"},"global":[1000],"local":[96],"args":[]})", "b.json"),
      Catch::Contains("b.json: local[0] = 96 does not divide global[0] = 1000"));
  CHECK_THROWS_WITH(parse_spec(R"({"kernel":{"file":"k.cl","name":"k"},"global":[1,2,3,4],"args":[]})", "c.json"),
                    Catch::Contains("c.json: global: must be an array of 1 to 3"));
  CHECK_THROWS_WITH(with_arg(R"({"kind":"buffer","type":"float","count":0})"),
                    Catch::Contains("t.json: args[0].count: must be a positive integer"));
  CHECK_THROWS_WITH(with_arg(R"({"kind":"buffer","type":"float4","count":4})"),
                    Catch::Contains("args[0].type") && Catch::Contains("unknown type 'float4'"));
  CHECK_THROWS_WITH(with_arg(R"({"kind":"image","type":"float"})"),
                    Catch::Contains("args[0].kind: must be buffer, scalar or local"));
  CHECK_THROWS_WITH(with_arg(R"({"kind":"buffer","type":"float","count":4,"access":"read","output":true})"),
                    Catch::Contains("an output buffer cannot have access 'read'"));
  CHECK_THROWS_WITH(with_arg(R"({"kind":"buffer","type":"float","count":4,"init":{"fill":"permutation"}})"),
                    Catch::Contains("args[0].init") && Catch::Contains("integer buffer"));
  CHECK_THROWS_WITH(with_arg(R"({"kind":"scalar","type":"int","value":1.5})"),
                    Catch::Contains("args[0].value: must be an integer"));
  CHECK_THROWS_WITH(with_arg(R"({"kind":"buffer","type":"int","count":4,"init":{"fill":"gauss"}})"),
                    Catch::Contains("unknown fill 'gauss'"));
  CHECK_THROWS_WITH(load_spec("/nonexistent/spec.json"), Catch::Contains("/nonexistent/spec.json: cannot be read"));
  CHECK_THROWS_WITH(
      parse_spec(R"({"format":"dop-spec/9","kernel":{"file":"k.cl","name":"k"},"global":[8],"args":[]})", "f.json"),
      Catch::Contains("unsupported format 'dop-spec/9'"));
}

TEST_CASE("initialisation follows the documented generator exactly") {
  // Expected values computed independently from docs/spec.md's definition (SplitMix64, seed 42).
  Spec s = with_arg(R"({"kind":"buffer","type":"int","count":4,"init":{"fill":"random_index","seed":42,"bound":1000}},
                       {"kind":"buffer","type":"double","count":2,"init":{"fill":"random","seed":42,"min":-1,"max":1}},
                       {"kind":"buffer","type":"int","count":5,"init":{"fill":"permutation","seed":42}},
                       {"kind":"buffer","type":"float","count":3,"init":{"fill":"index","start":10,"step":4}},
                       {"kind":"scalar","type":"long","value":-7})");
  const auto args = make_args(s);
  const int* ri = args[0].as<int>();
  CHECK(std::vector<int>(ri, ri + 4) == std::vector<int>{668, 698, 94, 288});
  CHECK(args[1].as<double>()[0] == Approx(-0.31341615580265314).epsilon(1e-15));
  CHECK(args[1].as<double>()[1] == Approx(0.9555535715080126).epsilon(1e-15));
  const int* p = args[2].as<int>();
  CHECK(std::vector<int>(p, p + 5) == std::vector<int>{1, 2, 3, 0, 4});
  CHECK(std::vector<float>(args[3].as<float>(), args[3].as<float>() + 3) == std::vector<float>{10, 14, 18});
  CHECK(*args[4].as<int64_t>() == -7);
}

TEST_CASE("a large permutation is a permutation and random ints stay in range") {
  Spec s = with_arg(R"({"kind":"buffer","type":"uint","count":100000,"init":{"fill":"permutation","seed":9}},
                       {"kind":"buffer","type":"short","count":10000,"init":{"fill":"random","seed":3,"min":-5,"max":5}})");
  const auto args = make_args(s);
  std::set<uint32_t> seen(args[0].as<uint32_t>(), args[0].as<uint32_t>() + 100000);
  CHECK(seen.size() == 100000);
  CHECK(*seen.rbegin() == 99999);
  std::set<int16_t> vals(args[1].as<int16_t>(), args[1].as<int16_t>() + 10000);
  CHECK(*vals.begin() == -5);
  CHECK(*vals.rbegin() == 5);
  CHECK(vals.size() == 11);
}

TEST_CASE("a spec runs on a PoCL device and matches its reference and a wrong output is caught") {
  register_reference("test:saxpy", saxpy_reference);
  const Spec s = parse_spec(saxpy_json(), "saxpy.json");
  const auto devs = cl::discover();
  REQUIRE_FALSE(devs.empty());
  auto run = run_single(s, kSaxpySource, devs.back().device);
  CHECK(run.kernel_ms >= 0);
  const auto want = run_reference(s);
  auto cmp = compare_outputs(s, run.args, want);
  CHECK(cmp.ok);
  CHECK(cmp.mismatches == 0);
  // The reference really computed something: y changed from its initial values.
  const auto init = make_args(s);
  CHECK_FALSE(compare_outputs(s, init, want).ok);
  // One perturbed element is one mismatch, named.
  run.args[0].as<float>()[17] += 0.5f;
  cmp = compare_outputs(s, run.args, want);
  CHECK_FALSE(cmp.ok);
  CHECK(cmp.mismatches == 1);
  CHECK_THAT(cmp.first, Catch::StartsWith("y[17]: got"));
}

TEST_CASE("a kernel whose argument count differs from the spec is refused by name") {
  const Spec s = parse_spec(R"({"kernel":{"file":"k.cl","name":"saxpy"},"global":[64],
      "args":[{"kind":"buffer","type":"float","count":64}]})",
                            "short.json");
  const auto devs = cl::discover();
  CHECK_THROWS_WITH(run_single(s, kSaxpySource, devs.at(0).device),
                    Catch::Contains("short.json: kernel 'saxpy' has 4 arguments, the spec gives 1"));
}

TEST_CASE("references by name and by family prefix") {
  Spec s = parse_spec(saxpy_json(), "s.json");
  s.reference = "nope:thing";
  CHECK_THROWS_WITH(run_reference(s), Catch::Contains("reference 'nope:thing' is not registered"));
  register_reference("fam:", [](const Spec&, std::vector<ArgData>& a) { a[0].as<float>()[0] = 42.f; });
  s.reference = "fam:anything";
  CHECK(run_reference(s)[0].as<float>()[0] == 42.f);
  s.reference = "";
  CHECK_THROWS_WITH(run_reference(s), Catch::Contains("no reference"));
}

TEST_CASE("integer outputs compare exactly") {
  Spec s = with_arg(R"({"name":"o","kind":"buffer","type":"int","count":3,"output":true})");
  auto a = make_args(s), b = make_args(s);
  CHECK(compare_outputs(s, a, b).ok);
  b[0].as<int>()[2] = 1;
  const auto c = compare_outputs(s, a, b);
  CHECK(c.mismatches == 1);
  CHECK(c.first == "o[2]: got 0, want 1");
}

TEST_CASE("large buffers fill the same in parallel and reset_writable restores only writable buffers") {
  Spec s = with_arg(R"({"name":"big","kind":"buffer","type":"float","count":3000001,"access":"read_write",
                        "init":{"fill":"random","seed":11,"min":-2,"max":2}},
                       {"name":"in","kind":"buffer","type":"int","count":5,"access":"read","init":{"fill":"index"}})");
  auto a = make_args(s);
  // Element values equal the sequential definition regardless of the thread split.
  Spec one =
      with_arg(R"({"kind":"buffer","type":"float","count":1,"init":{"fill":"random","seed":11,"min":-2,"max":2}})");
  CHECK(make_args(one)[0].as<float>()[0] == a[0].as<float>()[0]);
  const auto initial = a;
  a[0].as<float>()[2999999] = 99.f;
  a[1].as<int>()[3] = 77;  // a read-only buffer: not restored (kernels never write it)
  reset_writable(a, initial);
  CHECK(a[0].as<float>()[2999999] == initial[0].as<float>()[2999999]);
  CHECK(a[1].as<int>()[3] == 77);
}

// copy_bytes splits copies of 1 MiB and more between threads (the interposer's absorbed writes and reads of dop's
// copies): every byte lands where memcpy would put it, at sizes and offsets that do not divide into the pieces, and
// nothing outside the destination range is touched.
TEST_CASE("copy_bytes copies every byte of large and odd-sized ranges, and nothing else") {
  for (const size_t n : {size_t(0), size_t(1), size_t(4095), size_t(1) << 20, (size_t(5) << 20) + 13}) {
    std::vector<unsigned char> src(n + 7), dst(n + 16, 0xAB);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + i / 4099);
    copy_bytes(dst.data() + 5, src.data() + 7, n);
    INFO("n = " << n);
    CHECK(std::memcmp(dst.data() + 5, src.data() + 7, n) == 0);
    for (size_t i = 0; i < 5; ++i) CHECK(dst[i] == 0xAB);
    for (size_t i = n + 5; i < dst.size(); ++i) REQUIRE(dst[i] == 0xAB);
  }
}

TEST_CASE("scalars out of their type's range, counts beyond memory and a directory are refused by field") {
  CHECK_THROWS_WITH(with_arg(R"({"kind":"scalar","type":"int","value":1000000000000})"),
                    Catch::Contains("t.json: args[0].value: 1000000000000 is out of range for type int"));
  CHECK_THROWS_WITH(with_arg(R"({"kind":"scalar","type":"uchar","value":-1})"),
                    Catch::Contains("args[0].value: -1 is out of range for type uchar"));
  CHECK_THROWS_WITH(with_arg(R"({"kind":"scalar","type":"float","value":1e300})"),
                    Catch::Contains("args[0].value") && Catch::Contains("out of range for type float"));
  CHECK_NOTHROW(with_arg(R"({"kind":"scalar","type":"int","value":-2147483648})"));
  CHECK_NOTHROW(with_arg(R"({"kind":"scalar","type":"uint","value":4294967295})"));
  CHECK_THROWS_WITH(with_arg(R"({"kind":"buffer","type":"double","count":18000000000000000000})"),
                    Catch::Contains("args[0].count") && Catch::Contains("more bytes than memory can hold"));
  CHECK_THROWS_WITH(load_spec(DOP_SOURCE_DIR), Catch::Contains(": is a directory, not a spec file"));
}

TEST_CASE("a spec's arguments are checked against the kernel's parameters: count, kind, scalar type") {
  Spec spec = parse_spec(saxpy_json(), "specs/saxpy.json");  // y, x: buffers; a: float; n: int
  const std::vector<KernelParam> saxpy = {
      {ArgKind::buffer, ""}, {ArgKind::buffer, ""}, {ArgKind::scalar, "float"}, {ArgKind::scalar, "int"}};
  CHECK_NOTHROW(check_signature(spec, saxpy));
  auto fewer = saxpy;
  fewer.pop_back();
  CHECK_THROWS_WITH(check_signature(spec, fewer),
                    Catch::Contains("specs/saxpy.json: args: kernel 'saxpy' has 3 arguments, the spec gives 4"));
  auto local = saxpy;
  local[1].kind = ArgKind::local;
  CHECK_THROWS_WITH(check_signature(spec, local),
                    Catch::Contains("specs/saxpy.json: args[1].kind: 'x' is a buffer in the spec, the kernel "
                                    "'saxpy' takes a local there"));
  auto uint_n = saxpy;
  uint_n[3].type = "uint";  // same size, another type: the bits would be read as another number
  CHECK_THROWS_WITH(check_signature(spec, uint_n),
                    Catch::Contains("args[3].type: 'n' is int in the spec, the kernel 'saxpy' takes uint there"));
  auto typedef_a = saxpy;
  typedef_a[2].type = "real_t";  // a typedef: not one of the spec's types, not compared
  CHECK_NOTHROW(check_signature(spec, typedef_a));
  // Untyped scalars (the interposer's launches: bytes of a size) are compared by size.
  spec.typed_scalars = false;
  CHECK_NOTHROW(check_signature(spec, uint_n));
  auto long_n = saxpy;
  long_n[3].type = "long";
  CHECK_THROWS_WITH(check_signature(spec, long_n), Catch::Contains("args[3].type"));
}

TEST_CASE("host argument memory ends at a guard page: an overrun faults instead of reaching other memory") {
  if (!guard_pages_enabled()) return;  // AddressSanitizer: its redzones instead
  for (size_t bytes : {size_t(1), size_t(40), size_t(4000), size_t(4096), size_t(100000), size_t(16) << 20,
                       (size_t(20) << 20) + 40}) {  // the last two in huge pages (below)
    auto* p = static_cast<unsigned char*>(guarded_allocate(bytes));
    const size_t body = (bytes + kGuardAlign - 1) / kGuardAlign * kGuardAlign;
    CHECK(reinterpret_cast<uintptr_t>(p) % kGuardAlign == 0);
    if (bytes % 4096 == 0) CHECK(reinterpret_cast<uintptr_t>(p) % 4096 == 0);  // whole pages stay page-aligned
    std::memset(p, 1, body);                                                   // every byte of the body is ours
    const pid_t child = fork();                                                // no OpenCL in the child
    if (child == 0) {
      p[body] = 1;  // the first byte past the body
      _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGSEGV);
    guarded_deallocate(p, bytes);
  }
}

// The VmFlags of the mapping that holds p, from /proc/self/smaps ("" where none does).
static std::string vm_flags_of(const void* p) {
  std::ifstream in("/proc/self/smaps");
  const auto a = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    unsigned long lo = 0, hi = 0;
    // A mapping's first line: "lo-hi perms ..."; its fields follow, one per line ("Name:   value").
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) && line.find('-') < line.find(' ') &&
        std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2) {
      inside = a >= lo && a < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

TEST_CASE("large host buffers live in huge pages at staggered offsets, so that equal arrays do not line up") {
  if (!guard_pages_enabled()) return;  // AddressSanitizer: operator new instead
  const size_t bytes = size_t(16) << 20, huge = size_t(2) << 20;
  std::vector<unsigned char*> ps;
  std::set<uintptr_t> offsets;
  for (int i = 0; i < 4; ++i) {
    ps.push_back(static_cast<unsigned char*>(guarded_allocate(bytes)));
    std::memset(ps.back(), i, bytes);
    offsets.insert(reinterpret_cast<uintptr_t>(ps.back()) % huge);
  }
  CHECK(offsets.size() == 4);  // four buffers in a row: four offsets within a huge page
  // Where the kernel has transparent huge pages, the mappings carry the advice ("hg" in VmFlags).
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  if (thp && std::getline(thp, mode) && mode.find("[never]") == std::string::npos)
    for (auto* p : ps) CHECK(vm_flags_of(p).find(" hg") != std::string::npos);
  for (size_t i = 0; i < ps.size(); ++i) {
    CHECK(ps[i][0] == i);
    CHECK(ps[i][bytes - 1] == i);
    guarded_deallocate(ps[i], bytes);
  }
  // Small buffers keep 4 KiB pages and no advice.
  auto* small = guarded_allocate(100000);
  CHECK(vm_flags_of(small).find(" hg") == std::string::npos);
  guarded_deallocate(small, 100000);
}

// The malleable GPU form (dop_transform) and kernel bundles: every real kernel
// and the own test kernels reproduce the original's output at every GPU level
// and all 44 configurations on PoCL; kernels the loop would break are refused
// with the reason and still run (unthrottled) correctly; bundles round-trip and
// corrupt ones fail clearly; the CLI.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "dop/bundle.hpp"
#include "dop/kernels.hpp"
#include "dop/run_single.hpp"
#include "dop/runtime.hpp"
#include "dop/transform.hpp"
#include "support.hpp"

using namespace dop;
using dop::test::dop_binary;
using dop::test::run_command;

namespace {

std::string data(const std::string& f) { return std::string(DOP_SOURCE_DIR) + "/tests/data/transform/" + f; }

transform::Result transform_spec(const Spec& s) {
  return transform::make_malleable(read_kernel_source(s), s.kernel_file, s.kernel_name, s.build_options);
}

const cl::Selection& devices() {
  static const cl::Selection sel = cl::select_devices(cl::discover(), "pocl:0", "pocl:1");
  return sel;
}

// Runs `s` through the executor with its malleable form at `configs` and
// compares every output with `want`.
void check_configs(const Spec& s, const std::string& malleable, const std::vector<ArgData>& want,
                   const std::vector<Config>& configs, MemoryMode memory = MemoryMode::zero_copy) {
  ExecutorOptions o;
  o.memory = memory;
  o.malleable_source = malleable;
  Executor ex(s, read_kernel_source(s), devices(), o);
  const auto initial = make_args(s);
  auto args = initial;
  for (const auto& c : configs) {
    reset_writable(args, initial);
    const auto r = ex.launch(args, c);
    const auto cmp = compare_outputs(s, args, want);
    INFO(s.path << " at " << to_string(c) << " (" << memory_mode_name(memory) << "): " << cmp.first << "; note "
                << r.note);
    REQUIRE(cmp.ok);
    REQUIRE(r.cpu.work_items + r.gpu.work_items == s.global_items());
    if (c.cpu == 0) {  // the GPU ran everything, throttled to exactly the level asked for
      REQUIRE(r.gpu.work_groups == s.work_groups());
      REQUIRE(r.gpu_alloc == int(c.gpu * 8 + 0.5));
      REQUIRE(r.gpu_throttled == (c.gpu < 1));
    }
  }
}

std::vector<Config> gpu_levels() {
  std::vector<Config> v;
  for (int k = 1; k <= 8; ++k) v.push_back({0, k / 8.0});
  return v;
}

// The original kernel run plainly (full launch, one device): what every
// configuration must reproduce.
std::vector<ArgData> plain_run(const Spec& s) {
  return run_single(s, read_kernel_source(s), devices().cpu->device).args;
}

std::string temp_dir() {
  const auto d = std::filesystem::path(DOP_BINARY_DIR) / "test_transform_tmp";
  std::filesystem::create_directories(d);
  return d.string();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
}

}  // namespace

TEST_CASE(
    "every real-world kernel: the malleable form matches the reference "
    "at every GPU level and 44 configs") {
  kernels::register_references();
  const auto files = kernels::spec_files(kernels::default_dir(), "small");
  REQUIRE(files.size() == 30);
  const auto configs = Grid{}.configs();
  size_t n = 0;
  for (const auto& f : files) {
    const Spec s = load_spec(f);
    const auto m = transform_spec(s);
    INFO(f << ": " << m.reason);
    REQUIRE(m.ok);
    CHECK(m.source.find("int dop_gpu_mod, int dop_gpu_alloc") != std::string::npos);
    const auto want = run_reference(s);
    // The 44 configurations (they include every GPU level 1/8..8/8 with the CPU
    // off, where check_configs asserts that the GPU ran all work-groups
    // throttled to that level), alternating the memory mode (copy mode is the
    // discrete-GPU path).
    check_configs(s, m.source, want, configs, n++ % 2 ? MemoryMode::copy : MemoryMode::zero_copy);
  }
}

TEST_CASE(
    "malleable form: every builtin as in the original in 1D, 2D and 3D, "
    "with early returns and helpers") {
  for (const char* f : {"builtins_1d.json", "builtins_2d.json", "builtins_3d.json"}) {
    const Spec s = load_spec(data(f));
    const auto m = transform_spec(s);
    INFO(f << ": " << m.reason);
    REQUIRE(m.ok);
    const auto want = plain_run(s);
    // The check is not vacuous: the kernel writes ids (not zero) for most items
    // and returns early for the rest.
    const int* w = want[0].as<int>();
    size_t written = 0;
    for (size_t i = 0; i < s.global_items(); ++i) written += w[i * 23 + 22] >= 100;
    CHECK(written > s.global_items() / 2);
    CHECK(written < s.global_items());
    check_configs(s, m.source, want, gpu_levels());
    check_configs(s, m.source, want, Grid{}.configs());
  }
}

TEST_CASE(
    "malleable form: helper functions using ids are cloned and the other "
    "kernel keeps the originals") {
  const Spec s = load_spec(data("helpers.json"));
  const auto m = transform_spec(s);
  INFO(m.reason);
  REQUIRE(m.ok);
  CHECK(m.source.find("dop_v_load_at") != std::string::npos);
  CHECK(m.source.find("dop_v_tile_pos") != std::string::npos);
  CHECK(m.source.find("dop_v_via") != std::string::npos);
  CHECK(m.source.find("dop_v_scale") == std::string::npos);  // uses no ids: called as it is
  const auto want = plain_run(s);
  check_configs(s, m.source, want, gpu_levels());
  check_configs(s, m.source, want, Grid{}.configs(), MemoryMode::copy);
  // The other kernel of the file still builds from the malleable source and
  // runs with the original helpers.
  Spec other = s;
  other.kernel_name = "helpers_other";
  other.args.pop_back();
  other.global = {37 * 22 / 2};
  other.local = {37};
  other.build_options += range_form_options(other.global, other.global.size() - 1, {},
                                            true);  // the malleable source is built after the prelude
  const auto a = run_single(other, read_kernel_source(s), devices().cpu->device);
  const auto b = run_single(other, range_form_prelude() + m.source, devices().cpu->device);
  CHECK(compare_outputs(other, b.args, a.args).ok);
}

TEST_CASE(
    "malleable form: the strided loop covers groups whose size is not a "
    "multiple of dop_gpu_mod") {
  // Directly, without the executor: mod 3 with alloc 1 and 2, and nonsense
  // values (clamped), on a 1D group of 12.
  const Spec s = load_spec(data("builtins_1d.json"));
  const auto m = transform_spec(s);
  REQUIRE(m.ok);
  const auto want = plain_run(s);
  for (auto [mod, alloc] : std::vector<std::pair<int, int>>{{3, 1}, {3, 2}, {5, 4}, {8, 8}, {8, 0}, {0, 0}, {4, 9}}) {
    Spec ms = s;
    ArgSpec a;
    a.kind = ArgKind::scalar;
    a.type = ElemType::i32;
    a.name = "dop_gpu_mod";
    a.value = mod;
    ms.args.push_back(a);
    a.name = "dop_gpu_alloc";
    a.value = alloc;
    ms.args.push_back(a);
    const auto got = run_single(ms, m.source, devices().gpu->device);
    INFO("mod " << mod << " alloc " << alloc);
    REQUIRE(got.args[0].bytes == want[0].bytes);
    CHECK(std::memcmp(got.args[0].data(), want[0].data(), want[0].bytes) == 0);
  }
}

TEST_CASE(
    "kernels the work-list loop would break are refused with the reason "
    "and run unthrottled correctly") {
  for (const char* f : {"reduce.json", "shift.json"}) {
    const Spec s = load_spec(data(f));
    const auto m = transform_spec(s);
    INFO(m.reason);
    REQUIRE_FALSE(m.ok);
    CHECK(m.source.empty());
    CHECK_THAT(m.reason, Catch::EndsWith("the GPU runs unthrottled"));
    if (std::string(f) == "reduce.json") {
      CHECK_THAT(m.reason, Catch::StartsWith(s.kernel_file + ":3: kernel 'reduce' uses __local memory ('part')"));
      CHECK_THAT(m.reason, Catch::Contains("(and 2 more problems)"));
    } else {
      CHECK_THAT(m.reason, Catch::StartsWith(s.kernel_file + ":5: kernel 'shift' calls barrier(): the work-list loop"));
    }
    const auto want = plain_run(s);
    ExecutorOptions o;
    o.malleable_note = m.reason;
    Executor ex(s, read_kernel_source(s), devices(), o);
    const auto initial = make_args(s);
    for (const auto& c : std::vector<Config>{{0, 0.25}, {0.5, 0.5}, {0, 1}}) {
      auto args = initial;
      const auto r = ex.launch(args, c);
      CHECK_FALSE(r.gpu_throttled);
      if (c.gpu < 1) CHECK_THAT(r.note, Catch::Contains("GPU ran unthrottled") && Catch::Contains(m.reason));
      CHECK(compare_outputs(s, args, want).ok);
    }
  }
}

TEST_CASE("refusals name file, line, kernel and cause") {
  auto reason = [](const std::string& src, const std::string& kernel, const std::string& opts = {}) {
    const auto r = transform::make_malleable(src, "t.cl", kernel, opts);
    CHECK_FALSE(r.ok);
    return r.reason;
  };
  CHECK_THAT(reason("__kernel void k(__global float* a, __local float* t) {\n a[0] = "
                    "t[0];\n}\n",
                    "k"),
             Catch::StartsWith("t.cl:1: kernel 'k' takes a __local argument ('t')"));
  CHECK_THAT(reason("void h(__global float* a) {\n  "
                    "mem_fence(CLK_GLOBAL_MEM_FENCE);\n a[0] = 1; }\n"
                    "__kernel void k(__global float* a) { h(a); }\n",
                    "k"),
             Catch::StartsWith("t.cl:2: kernel 'k' calls mem_fence() (in 'h', "
                               "which the kernel calls)"));
  CHECK_THAT(reason("__kernel void k(__global int* a) {\n  a[get_global_id(0)] = "
                    "work_group_reduce_add(a[0]);\n}\n",
                    "k", "-cl-std=CL2.0"),
             Catch::StartsWith("t.cl:2: kernel 'k' calls work_group_reduce_add(): it "
                               "is a work-group collective"));
  CHECK_THAT(reason("__kernel void k(__global float* a) {\n  a[0] = 1;\n  "
                    "work_group_barrier(CLK_GLOBAL_MEM_FENCE);\n}\n",
                    "k", "-cl-std=CL2.0"),
             Catch::StartsWith("t.cl:3: kernel 'k' calls work_group_barrier(): "
                               "the work-list loop would break it"));
  CHECK_THAT(reason("void ext(__global float* a);\n__kernel void k(__global "
                    "float* a) {\n  ext(a);\n}\n",
                    "k"),
             Catch::StartsWith("t.cl:3: kernel 'k' calls 'ext', which has no "
                               "definition in this file"));
  CHECK_THAT(reason("__kernel void a(__global float* x) {}\n__kernel void b(__global "
                    "float* x) {}\n",
                    "c"),
             Catch::Equals("t.cl: no kernel 'c' (kernels: a, b); the GPU runs unthrottled"));
  CHECK_THAT(reason("__kernel void k(__global float* a) { a[0] = undeclared; }\n", "k"),
             Catch::Contains("the front end cannot parse the source") && Catch::Contains("undeclared"));
  // A call to a helper that uses ids, hidden in a macro body, cannot be
  // rewritten: refused, not miscompiled.
  CHECK_THAT(reason("size_t id(void) { return get_global_id(0); }\n#define ID id()\n"
                    "__kernel void k(__global float* a) {\n  a[ID] = 1;\n}\n",
                    "k"),
             Catch::StartsWith("t.cl:4: kernel 'k' calls 'id' (which uses work-item "
                               "ids) through a macro"));
}

TEST_CASE(
    "malleable form: kernel prototypes, (void) helpers and atomics on "
    "global memory") {
  const std::string src =
      "__kernel void k(__global int* a, __global int* count);\n"
      "size_t g(void) { return get_global_id(0); }\n"
      "__kernel void k(__global int* a, __global int* count) {\n"
      "  a[g()] = (int)get_local_id(0);\n"
      "  atomic_inc(count);\n"
      "}\n";
  const auto r = transform::make_malleable(src, "t.cl", "k");
  INFO(r.reason);
  REQUIRE(r.ok);
  CHECK(r.source.find("__kernel void k(__global int* a, __global int* count, "
                      "int dop_gpu_mod, int dop_gpu_alloc);") != std::string::npos);
  const std::string spec_text =
      R"({"format":"dop-spec/1","name":"atomics","kernel":{"file":"t.cl","name":"k"},"global":[512],"local":[64],
          "args":[{"name":"a","kind":"buffer","type":"int","count":512,"output":true},
                  {"name":"count","kind":"buffer","type":"int","count":1,"output":true}]})";
  const std::string dir = temp_dir();
  write_file(dir + "/t.cl", src);
  write_file(dir + "/atomics.json", spec_text);
  const Spec s = load_spec(dir + "/atomics.json");
  const auto want = plain_run(s);
  REQUIRE(want[1].as<int>()[0] == 512);
  check_configs(s, r.source, want, gpu_levels());
}

TEST_CASE("bundle: save and load round-trip, and every field survives") {
  Bundle b;
  b.file = "k.cl";
  b.kernel = "k";
  b.build_options = "-DN=3";
  b.source =
      "__kernel void k(__global float* a) { a[get_global_id(0)] = N; "
      "}\n\"quotes\" and \\ and \xc3\xa9\n";
  b.malleable_source =
      "/* m */ __kernel void k(__global float* a, int "
      "dop_gpu_mod, int dop_gpu_alloc) {}\n";
  b.features_json = R"({"kernel":"k","features":{"mem_continuous":1}})";
  b.made_by = "dop test";
  const std::string path = temp_dir() + "/roundtrip.json";
  save_bundle(b, path);
  const Bundle c = load_bundle(path);
  CHECK(c.file == b.file);
  CHECK(c.kernel == b.kernel);
  CHECK(c.build_options == b.build_options);
  CHECK(c.source == b.source);
  CHECK(c.malleable_source == b.malleable_source);
  CHECK(c.malleable_note.empty());
  CHECK(nlohmann::json::parse(c.features_json) == nlohmann::json::parse(b.features_json));
  CHECK(c.made_by == b.made_by);
  CHECK(nlohmann::json::parse(dop::test::read_file(path))["format"] == "dop-bundle/1");
  // No malleable form: null source and the note.
  b.malleable_source.clear();
  b.malleable_note = "k.cl:1: kernel 'k' calls barrier(): ...; the GPU runs unthrottled";
  save_bundle(b, path);
  const Bundle d = load_bundle(path);
  CHECK(d.malleable_source.empty());
  CHECK(d.malleable_note == b.malleable_note);
  CHECK_NOTHROW(check_bundle_matches(d, path, b.source, "k", "-DN=3"));
  CHECK_THROWS_WITH(check_bundle_matches(d, path, b.source, "other", "-DN=3"),
                    Catch::Contains(path) && Catch::Contains("for kernel 'k', the spec runs kernel 'other'"));
  CHECK_THROWS_WITH(check_bundle_matches(d, path, b.source + " ", "k", "-DN=3"),
                    Catch::Contains("made from another source"));
  CHECK_THROWS_WITH(check_bundle_matches(d, path, b.source, "k", "-DN=4"),
                    Catch::Contains("build options '-DN=3', the kernel is built with '-DN=4'"));
}

TEST_CASE("bundle folders: every bundle in path order, and a folder that is not one or a bad bundle is named") {
  const std::string dir = temp_dir() + "/bundle_folder";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Bundle b;
  b.file = "k.cl";
  b.source = "__kernel void k(__global float* a) {}\n";
  b.malleable_note = "none";
  for (const char* k : {"zeta", "alpha"}) {
    b.kernel = k;
    save_bundle(b, dir + "/" + k + ".json");
  }
  { std::ofstream(dir + "/notes.txt") << "not a bundle"; }
  const auto all = load_bundle_folder(dir);
  REQUIRE(all.size() == 2);
  CHECK(all[0].first == dir + "/alpha.json");
  CHECK(all[0].second.kernel == "alpha");
  CHECK(all[1].second.kernel == "zeta");
  CHECK_THROWS_WITH(load_bundle_folder(dir + "/missing"), Catch::Contains("bundle folder '" + dir + "/missing'"));
  { std::ofstream(dir + "/broken.json") << "{\"format\": \"dop-bundle/1\""; }
  CHECK_THROWS_WITH(load_bundle_folder(dir), Catch::Contains("broken.json"));
}

TEST_CASE(
    "bundle: corrupt, foreign and mismatching bundles fail naming the "
    "file and the problem") {
  Bundle b;
  b.file = "k.cl";
  b.kernel = "k";
  b.source = "__kernel void k(__global float* a) { a[0] = 1; }\n";
  b.malleable_source =
      "__kernel void k(__global float* a, int dop_gpu_mod, "
      "int dop_gpu_alloc) { a[0] = 1; }\n";
  const std::string good = bundle_to_json(b);
  const std::string path = temp_dir() + "/corrupt.json";
  auto load_text = [&](const std::string& text) {
    write_file(path, text);
    return load_bundle(path);
  };
  auto edited = [&](auto fn) {
    auto j = nlohmann::json::parse(good);
    fn(j);
    return j.dump();
  };
  CHECK_NOTHROW(load_text(good));
  CHECK_THROWS_WITH(load_bundle(path + ".missing"), Catch::Equals(path + ".missing: cannot read the bundle"));
  CHECK_THROWS_WITH(load_text(good.substr(0, good.size() / 2)), Catch::StartsWith(path + ": not a valid JSON bundle"));
  CHECK_THROWS_WITH(load_text("[1, 2]"), Catch::Contains(path) && Catch::Contains("not a JSON object"));
  CHECK_THROWS_WITH(load_text(R"({"format":"dop-spec/1"})"),
                    Catch::Equals(path + ": not a dop bundle (format 'dop-spec/1', expected dop-bundle/1)"));
  CHECK_THROWS_WITH(load_text(edited([](auto& j) { j["format"] = "dop-bundle/2"; })),
                    Catch::Equals(path + ": bundle format 'dop-bundle/2' is not supported "
                                         "(this dop reads dop-bundle/1)"));
  CHECK_THROWS_WITH(load_text(edited([](auto& j) { j.erase("source"); })),
                    Catch::Equals(path + ": missing field 'source'"));
  CHECK_THROWS_WITH(load_text(edited([](auto& j) { j["kernel"]["name"] = 3; })),
                    Catch::Equals(path + ": field 'kernel.name' must be a string, found number"));
  CHECK_THROWS_WITH(load_text(edited([](auto& j) { j["source"] = "__kernel void k() {}"; })),
                    Catch::Contains("the source of kernel 'k' does not match its checksum"));
  CHECK_THROWS_WITH(load_text(edited([](auto& j) { j["malleable"]["source"] = "x"; })),
                    Catch::Contains("the malleable source of kernel 'k' does not match its checksum"));
  CHECK_THROWS_WITH(load_text(edited([](auto& j) { j["malleable"]["source"] = nullptr; })),
                    Catch::Contains(path) && Catch::Contains("checksum"));
}

TEST_CASE("dop bundle and dop run --bundle --validate through the CLI") {
  const std::string dir = temp_dir();
  // A transformable kernel: the bundle carries the malleable form, and the
  // throttled run validates.
  const std::string b1 = dir + "/helpers.bundle.json";
  auto r = run_command(dop_binary() + " bundle " + data("helpers.cl") + " --kernel helpers --out " + b1);
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("malleable form: yes"));
  const Bundle bundle = load_bundle(b1);
  CHECK(bundle.kernel == "helpers");
  CHECK(nlohmann::json::parse(bundle.features_json)["kernel"] == "helpers");
  for (const char* cfg : {"0,0.25", "0.5,0.5", "0,1"}) {
    r = run_command(dop_binary() + " run " + data("helpers.json") + " --bundle " + b1 + " --config " + cfg +
                    " --validate --json");
    INFO(cfg << ": " << r.out);
    REQUIRE(r.rc == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["validation"]["ok"] == true);
    if (std::string(cfg) == "0,0.25") CHECK(j["gpu_throttled"] == true);
  }
  // A refused kernel: the bundle carries the reason, the run says the GPU ran
  // unthrottled and still validates.
  const std::string b2 = dir + "/shift.bundle.json";
  r = run_command(dop_binary() + " bundle " + data("shift.cl") + " --kernel shift --out " + b2);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("malleable form: no") && Catch::Contains("barrier()"));
  r = run_command(dop_binary() + " run " + data("shift.json") + " --bundle " + b2 +
                  " --config 0,0.5 --validate --json");
  REQUIRE(r.rc == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["validation"]["ok"] == true);
  CHECK(j["gpu_throttled"] == false);
  CHECK_THAT(j["note"].get<std::string>(), Catch::Contains("GPU ran unthrottled") && Catch::Contains("barrier()"));
  // Without --bundle or --malleable, an analysis build makes the malleable form
  // on the fly.
  r = run_command(dop_binary() + " run " + data("builtins_3d.json") + " --config 0,0.375 --validate --json");
  REQUIRE(r.rc == 0);
  j = nlohmann::json::parse(r.out);
  CHECK(j["gpu_throttled"] == true);
  CHECK(j["gpu_alloc"] == 3);
  CHECK(j["validation"]["ok"] == true);
  // A bundle of another kernel, a corrupt bundle, and --bundle with --malleable
  // are errors that say why.
  r = run_command(dop_binary() + " run " + data("helpers.json") + " --bundle " + b2 + " --config 0,0.5");
  CHECK(r.rc != 0);
  CHECK_THAT(r.out, Catch::Contains(b2) && Catch::Contains("for kernel 'shift', the spec runs kernel 'helpers'"));
  write_file(dir + "/broken.json", "{\"format\": \"dop-bundle/1\", ");
  r = run_command(dop_binary() + " run " + data("helpers.json") + " --bundle " + dir + "/broken.json");
  CHECK(r.rc != 0);
  CHECK_THAT(r.out, Catch::Contains(dir + "/broken.json: not a valid JSON bundle"));
  r = run_command(dop_binary() + " run " + data("helpers.json") + " --bundle " + b1 + " --malleable " +
                  data("helpers.cl"));
  CHECK(r.rc != 0);
  r = run_command(dop_binary() + " bundle " + data("helpers.cl") + " --kernel nope --out " + dir + "/x.json");
  CHECK(r.rc != 0);
  CHECK_THAT(r.out, Catch::Contains("no kernel 'nope'"));
}

TEST_CASE("dop bundle of a kernel that does not compile writes nothing and names the error") {
  const std::string dir = std::string(DOP_BINARY_DIR) + "/transform_cli_test";
  std::filesystem::create_directories(dir);
  const std::string src = dir + "/broken.cl", out = dir + "/broken.bundle.json";
  write_file(src,
             "__kernel void broken(__global float* a) {\n"
             "  const int i = get_global_id(0);\n"
             "  a[i] = a[i] * 2.0f\n"  // no semicolon
             "}\n");
  std::filesystem::remove(out);
  auto r = run_command(dop_binary() + " bundle " + src + " --kernel broken --out " + out);
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("dop: error: " + src + ":3:") && Catch::Contains("expected ';'") &&
                        Catch::Contains("does not compile): no bundle written"));
  CHECK_FALSE(std::filesystem::exists(out));
  // Fixed, it bundles.
  write_file(src, "__kernel void broken(__global float* a) { a[get_global_id(0)] *= 2.0f; }\n");
  r = run_command(dop_binary() + " bundle " + src + " --out " + out);
  CHECK(r.rc == 0);
  CHECK(std::filesystem::exists(out));
  // No kernel file at all is bad usage: exit 2 (docs/cli.md).
  r = run_command(dop_binary() + " bundle --out " + out);
  CHECK(r.rc == 2);
  CHECK_THAT(r.out, Catch::Contains("give a kernel FILE, or --from-record DIR"));
}

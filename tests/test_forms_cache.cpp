// Kernel forms made on the fly and cached on disk (dop/forms_cache.hpp), recorded programs (dop/kernel_record.hpp),
// the hash behind their keys, and the near-miss notes of bundles that differ (dop/bundle.hpp). Runtime tier; the
// cases that run the real bundler (`dop bundle`, analysis tier) are built where it is.
#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

#include "dop/bundle.hpp"
#include "dop/files.hpp"
#include "dop/forms_cache.hpp"
#include "dop/hash.hpp"
#include "dop/kernel_forms.hpp"
#include "dop/kernel_record.hpp"
#include "dop/process.hpp"
#include "support.hpp"

using namespace dop;
namespace fs = std::filesystem;

namespace {

std::string fresh_dir(const std::string& name) {
  const std::string dir = std::string(DOP_BINARY_DIR) + "/test_forms_cache/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::vector<std::string> files_with(const std::string& dir, const std::string& ext) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ext) out.push_back(e.path().string());
  return out;
}

const char* kScale =
    "__kernel void scale(__global const float* a, __global float* b, int n) {\n"
    "  int i = get_global_id(0);\n"
    "  if (i < n) b[i] = a[i] * SCALE;\n"
    "}\n";

}  // namespace

TEST_CASE("forms cache: SHA-256 of the FIPS 180-4 test vectors, and length-prefixed fields", "[forms-cache]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex(std::string(1000000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  CHECK(sha256_fields({"ab", "c"}) != sha256_fields({"a", "bc"}));
}

TEST_CASE("forms cache: a near-miss bundle says what differs: the first differing line, or both option strings",
          "[forms-cache]") {
  CHECK(first_difference("a\nb\n", "a\nb\n").empty());
  CHECK(first_difference("a\n  c[i] = a[i] + b[i];\n", "a\n  c[i] = a[i] - b[i];\n") ==
        "line 2: '  c[i] = a[i] + b[i];' against '  c[i] = a[i] - b[i];'");
  CHECK(first_difference("x\n", "x\ny\n") == "line 2: (end of source) against 'y'");
  CHECK(first_difference("x\r\n", "x\n") == "line 1: 'x\\r' against 'x'");  // a CR shows
  CHECK_THAT(first_difference("x", "x\n"), Catch::Contains("line 1") && Catch::Contains("final newline"));
  const std::string longline = std::string(200, 'x') + "A" + std::string(200, 'y');
  const std::string d = first_difference(longline, std::string(200, 'x') + "B" + std::string(200, 'y'));
  CHECK(d.size() < 200);  // shortened around the difference
  CHECK_THAT(d, Catch::Contains("xA") && Catch::Contains("xB"));

  const std::string dir = fresh_dir("nearmiss");
  Bundle b;
  b.file = "scale.cl";
  b.kernel = "scale";
  b.build_options = "-DSCALE=4";
  b.source = kScale;
  b.malleable_note = "not made";
  save_bundle(b, dir + "/scale.json");
  const KernelFormsResolver forms({{dir}, nullptr, {}, nullptr});
  const KernelForms opts = forms.resolve({kScale, "scale", "-DSCALE=3", ""});
  CHECK(opts.origin.empty());
  CHECK_THAT(opts.malleable_note,
             Catch::Contains(dir + "/scale.json") &&
                 Catch::Contains("build options '-DSCALE=4', the kernel is built with '-DSCALE=3'"));
  std::string edited = kScale;
  edited.replace(edited.find("a[i] * SCALE"), 12, "SCALE * a[i]");
  const KernelForms src = forms.resolve({edited, "scale", "-DSCALE=4", ""});
  CHECK_THAT(src.malleable_note, Catch::Contains(dir + "/scale.json") &&
                                     Catch::Contains("line 3: '  if (i < n) b[i] = a[i] * SCALE;' against "
                                                     "'  if (i < n) b[i] = SCALE * a[i];'"));
  CHECK_THAT(src.no_code, Catch::Contains("line 3"));
}

TEST_CASE("forms cache: recorded programs, once per distinct program, read back with their kernels", "[forms-cache]") {
  const std::string dir = fresh_dir("record") + "/rec";
  const std::string first = record_program(dir, kScale, "-DSCALE=3", {"scale"});
  CHECK(!first.empty());
  CHECK(record_program(dir, kScale, "-DSCALE=3", {"scale"}).empty());   // already there
  CHECK(!record_program(dir, kScale, "-DSCALE=5", {"scale"}).empty());  // other options: another program
  const auto records = read_records(dir);
  REQUIRE(records.size() == 2);
  size_t found = 0;
  for (const auto& r : records) {
    CHECK(r.source == kScale);
    CHECK(r.kernels == std::vector<std::string>{"scale"});
    if (r.record_path != first) continue;
    ++found;
    CHECK(r.build_options == "-DSCALE=3");
  }
  CHECK(found == 1);
  // A damaged source is named.
  write_file_atomically(records[0].source_path, "edited");
  CHECK_THROWS_WITH(read_records(dir), Catch::Contains(records[0].record_path) && Catch::Contains("checksum"));
  CHECK_THROWS_WITH(read_records(dir + "/none"), Catch::Contains("is not a folder"));
}

TEST_CASE("forms cache: without a bundler there is nothing to make, and the reason says how to get bundles",
          "[forms-cache]") {
  const std::string dir = fresh_dir("nobundler");
  std::vector<std::string> log;
  const auto cache = std::make_shared<const FormsCache>(
      FormsCacheOptions{dir, "", 10, [&](const std::string& l) { log.push_back(l); }});
  const KernelFormsResolver forms({{}, nullptr, {}, cache});
  const KernelForms f = forms.resolve({kScale, "scale", "-DSCALE=3", ""});
  CHECK(f.origin.empty());
  CHECK_THAT(f.no_code, Catch::Contains("dop exec --record") && Catch::Contains("dop bundle --from-record"));
  CHECK(files_with(dir, ".failed").empty());  // not the kernel's fault: nothing cached
  // A bundler that cannot be started is not cached either.
  const FormsCache missing({dir, "/nonexistent/dop", 10, {}});
  std::string why;
  CHECK(!missing.bundle({kScale, "scale", "", ""}, why));
  CHECK_THAT(why, Catch::Contains("cannot run the bundler") && Catch::Contains("/nonexistent/dop"));
  CHECK(files_with(dir, ".failed").empty());
}

TEST_CASE("forms cache: a child process's output, exit status and time limit", "[forms-cache]") {
  const auto ok = run_process({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, 10);
  CHECK(ok.started);
  CHECK(ok.exit_code == 3);
  CHECK(ok.output == "out\nerr\n");
  const auto slow = run_process({"/bin/sleep", "10"}, 0.2);
  CHECK(slow.timed_out);
  CHECK(slow.signal == 9);
  const auto none = run_process({"/nonexistent/program"}, 1);
  CHECK(!none.started);
  CHECK_THAT(none.status(), Catch::Contains("cannot start"));
  // An application that ignores SIGCHLD: the child is reaped by the kernel, its output still arrives, and the
  // status is unknown rather than a failure (the forms cache then judges by the bundle written).
  signal(SIGCHLD, SIG_IGN);
  const auto ignored = run_process({"/bin/sh", "-c", "echo hi; exit 4"}, 10);
  signal(SIGCHLD, SIG_DFL);
  CHECK(ignored.started);
  CHECK(!ignored.timed_out);
  CHECK(ignored.output == "hi\n");
  CHECK(ignored.exit_code == -1);
  CHECK(ignored.signal == 0);
  CHECK_THAT(ignored.status(), Catch::Contains("status unknown"));
  // The child does not inherit LD_PRELOAD (a preloaded interposer stays in the application).
  setenv("LD_PRELOAD", "", 1);
  const auto env = run_process({"/bin/sh", "-c", "echo ${LD_PRELOAD-unset}"}, 10);
  unsetenv("LD_PRELOAD");
  CHECK(env.output == "unset\n");
  CHECK(timed_out_after(2) == "timed out after 2 s");
  CHECK(timed_out_after(0.001) == "timed out after 0.001 s");
}

TEST_CASE("a child process reporting on a descriptor of its own, with a time limit on its silence", "[forms-cache]") {
  // What dop sweep's supervisor needs of its workers: lines on fd 3 as they come, stdout left alone, the variables
  // it sets, and a limit that counts from the last report (1 s here; the child runs 1.5 s, reporting every 0.3 s).
  ProcessOptions o;
  o.report_fd = 3;
  o.timeout_s = 1;
  o.idle_timeout = true;
  o.env = {"DOP_TEST_VALUE=seven"};
  std::vector<std::string> lines;
  o.on_line = [&](const std::string& l) { lines.push_back(l); };
  const auto r = run_process({"/bin/sh", "-c",
                              "echo to-stdout; for i in 1 2 3 4 5; do echo \"W $i $DOP_TEST_VALUE\" >&3; sleep 0.3; "
                              "done; printf last >&3"},
                             o);
  CHECK(r.started);
  CHECK(!r.timed_out);
  CHECK(r.exit_code == 0);
  CHECK(lines == std::vector<std::string>{"W 1 seven", "W 2 seven", "W 3 seven", "W 4 seven", "W 5 seven", "last"});
  CHECK(r.output.find("to-stdout") == std::string::npos);
  // Silent for longer than the limit: killed.
  const auto silent = run_process({"/bin/sh", "-c", "echo W 1 >&3; sleep 10"}, o);
  CHECK(silent.timed_out);
  CHECK(silent.signal == 9);
}

#if DOP_ANALYSIS
TEST_CASE("forms cache: the real bundler makes a bundle once, later processes read it, corrupt entries are remade",
          "[forms-cache][analysis]") {
  const std::string dir = fresh_dir("made");
  std::vector<std::string> log;
  const FormsCacheOptions o{dir, dop::test::dop_binary(), 120, [&](const std::string& l) { log.push_back(l); }};
  const KernelSource k{kScale, "scale", "-DSCALE=3", ""};
  {
    const KernelFormsResolver forms({{}, nullptr, {}, std::make_shared<const FormsCache>(o)});
    const KernelForms f = forms.resolve(k);
    INFO(f.malleable_note);
    CHECK(f.origin == dir + "/" + forms_cache_key(k) + ".json");
    CHECK(!f.malleable_source.empty());
    CHECK(f.code.has_value());
    CHECK(f.arg_names == std::vector<std::string>{"a", "b", "n"});
    REQUIRE(!log.empty());
    CHECK_THAT(log.back(), Catch::Contains("made by"));
  }
  // "Another process": a new cache whose bundler does not exist reads the entry.
  FormsCacheOptions cached = o;
  cached.bundler = "/nonexistent/dop";
  const FormsCache again(cached);
  std::string why;
  const auto hit = again.bundle(k, why);
  REQUIRE(hit);
  CHECK(hit->second.kernel == "scale");
  CHECK_THAT(log.back(), Catch::Contains("from cache"));
  // A corrupt entry is ignored and made again.
  write_file_atomically(hit->first, "{ not a bundle");
  const FormsCache remake(o);
  const auto made = remake.bundle(k, why);
  REQUIRE(made);
  CHECK(made->second.malleable_source == hit->second.malleable_source);
  CHECK(load_bundle(hit->first).kernel == "scale");
  bool ignored = false;
  for (const auto& l : log) ignored |= l.find("cache entry ignored and made again") != std::string::npos;
  CHECK(ignored);
}

TEST_CASE("forms cache: source the analysis cannot parse is a negative entry with its reason, not retried",
          "[forms-cache][analysis]") {
  const std::string dir = fresh_dir("negative");
  const KernelSource bad{"__kernel void broken(__global float* a) {\n  a[get_global_id(0)] = ;\n}\n", "broken", "", ""};
  const FormsCache cache({dir, dop::test::dop_binary(), 120, {}});
  std::string why;
  CHECK(!cache.bundle(bad, why));
  CHECK_THAT(why, Catch::Contains("failed (exit 1)") && Catch::Contains("expected expression"));
  REQUIRE(files_with(dir, ".failed").size() == 1);
  // Not retried: a cache whose bundler does not exist gives the same reason from the entry.
  const FormsCache later({dir, "/nonexistent/dop", 120, {}});
  std::string cached;
  CHECK(!later.bundle(bad, cached));
  CHECK_THAT(cached, Catch::Contains("expected expression") && Catch::Contains(files_with(dir, ".failed")[0]));
  // A corrupt negative entry is dropped and the analysis runs again (and fails again).
  write_file_atomically(files_with(dir, ".failed")[0], "garbage");
  std::string again;
  CHECK(!cache.bundle(bad, again));
  CHECK_THAT(again, Catch::Contains("expected expression"));
  CHECK(load_bundle_folder(dir).empty());  // no bundle was made
}
#endif

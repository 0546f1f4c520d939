// features/: Dopia Table 1 counts on the paper's example and on hand-checked kernels (tests/data/features/*.cl, each
// file's header comment derives its numbers), the features beyond Table 1, robustness, and the output formats.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <string>

#include "dop/expr.hpp"
#include "dop/features.hpp"
#include "support.hpp"

using dop::features::AnalysisResult;
using dop::features::KernelFeatures;
using dop::features::Options;
using dop::features::TripCount;
using dop::test::read_file;

namespace {

std::string data_path(const std::string& name) { return std::string(DOP_SOURCE_DIR) + "/tests/data/features/" + name; }

AnalysisResult analyze_file(const std::string& name, const Options& options = {}) {
  const std::string path = data_path(name);
  return dop::features::analyze(read_file(path), path, options);
}

/// The one kernel of a file (or the named one).
KernelFeatures kernel_of(const std::string& file, const std::string& kernel = "") {
  const auto r = analyze_file(file);
  for (const auto& k : r.kernels)
    if (kernel.empty() || k.name == kernel) {
      if (kernel.empty()) REQUIRE(r.kernels.size() == 1);
      return k;
    }
  FAIL("no kernel '" << kernel << "' in " << file);
  return {};
}

const dop::features::ArgInfo& arg(const KernelFeatures& k, const std::string& name) {
  for (const auto& a : k.args)
    if (a.name == name) return a;
  FAIL("no argument " << name);
  static dop::features::ArgInfo none;
  return none;
}

bool has_diagnostic(const AnalysisResult& r, const std::string& text) {
  for (const auto& d : r.diagnostics)
    if (d.message.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("the paper's worked example gives constant 1, continuous 2, stride 2, random 1") {
  for (const char* file : {"paper_example.cl", "paper_flat.cl"}) {
    INFO(file);
    const auto k = kernel_of(file);
    CHECK(k.mem_constant == 1);    // C[c1]
    CHECK(k.mem_continuous == 2);  // A[i][j], D[i][j]
    CHECK(k.mem_stride == 2);      // B[j][i] twice
    CHECK(k.mem_random == 1);      // C[B[j][i]]
    CHECK(k.arith_float == 3);     // the three +; loop counters are not counted
    CHECK(k.mem_global_loads == 5);
    CHECK(k.mem_global_stores == 1);
    CHECK(k.complete);
  }
  CHECK(kernel_of("paper_example.cl").arith_int == 0);  // 2D subscripts: the address arithmetic is implicit
  CHECK(kernel_of("paper_flat.cl").arith_int == 8);     // i*M + j etc. are written out: 4 x 2
}

TEST_CASE("classification of single stores, outside and inside loops") {
  // The class of the one store A[index] (outside loops: along get_global_id(0); inside: along the loop).
  auto class_of = [](const std::string& index, const std::string& loop = "") {
    const std::string body = "A[" + index + "] = 0.0f;";
    const std::string src = "__kernel void k(__global float* A, int W, int N) {\n  int gid = get_global_id(0);\n  " +
                            (loop.empty() ? body : loop + " { " + body + " }") + "\n}\n";
    const auto r = dop::features::analyze(src, "one.cl");
    REQUIRE(r.kernels.size() == 1);
    const auto& k = r.kernels[0];
    REQUIRE(k.mem_global_stores == 1);
    // The classes present (the store's, plus any loads in the index).
    std::string out;
    for (const auto& [name, n] : {std::pair<const char*, int64_t>{"constant", k.mem_constant},
                                  {"continuous", k.mem_continuous},
                                  {"stride", k.mem_stride},
                                  {"random", k.mem_random}})
      if (n) out += (out.empty() ? "" : ",") + std::string(name);
    return out;
  };
  CHECK(class_of("gid") == "continuous");
  CHECK(class_of("-gid") == "continuous");                     // backwards, still one element apart
  CHECK(class_of("(gid / W) * W + gid % W") == "continuous");  // floor quotients cancel
  CHECK(class_of("get_group_id(0) * get_local_size(0) + get_local_id(0)") == "continuous");
  CHECK(class_of("gid << 2") == "stride");
  CHECK(class_of("gid * W") == "stride");             // a launch-time stride
  CHECK(class_of("get_global_id(1)") == "constant");  // does not change along dimension 0
  CHECK(class_of("W + 3") == "constant");
  CHECK(class_of("gid / 2") == "random");  // not affine
  CHECK(class_of("gid % N") == "random");
  CHECK(class_of("(gid & 3) + 8") == "random");
  CHECK(class_of("gid * gid") == "random");
  CHECK(class_of("(int)A[gid]") == "continuous,random");  // the load A[gid], the store through it
  CHECK(class_of("i", "for (int i = 0; i < N; i++)") == "continuous");
  CHECK(class_of("i", "for (int i = N; i > 0; i -= 2)") == "stride");
  CHECK(class_of("gid", "for (int i = 0; i < N; i++)") == "constant");
  CHECK(class_of("i * W + gid", "for (int i = 0; i < N; i++)") == "stride");
  CHECK(class_of("j", "for (int j = 0, i = 0; i < N; i++) if (i % 3 == 0) j++; else") == "random");
  CHECK(class_of("(int)A[0] + i", "for (int i = 0; i < N; i++)") == "constant,continuous");  // invariant load
}

TEST_CASE("hand-checked kernels: Table 1 counts") {
  struct Expect {
    const char* file;
    const char* kernel;
    int64_t constant, continuous, stride, random, arith_int, arith_float;
  };
  // Each row is derived by hand in the header comment of the .cl file.
  const Expect table[] = {
      {"vec_add.cl", "vec_add", 0, 3, 0, 0, 0, 1},
      {"early_return.cl", "scale", 0, 4, 0, 0, 0, 2},
      {"gemm_2d.cl", "gemm", 0, 2, 1, 0, 6, 2},
      {"transpose_2d.cl", "transpose", 0, 1, 1, 0, 4, 0},
      {"stencil_3d.cl", "stencil", 0, 8, 0, 0, 12, 7},
      {"saxpy_float4.cl", "saxpy4", 0, 3, 0, 0, 0, 2},
      {"vload_vstore.cl", "copy4", 0, 2, 2, 0, 3, 1},
      {"pointer_arith.cl", "rows", 0, 1, 1, 0, 1, 0},
      {"helpers.cl", "helpers", 0, 2, 1, 0, 1, 3},
      {"macros.cl", "macro_kernel", 0, 3, 0, 0, 8, 2},
      {"local_tile.cl", "tiled_sum", 0, 2, 0, 0, 0, 1},
      {"private_array.cl", "priv", 0, 2, 0, 0, 4, 0},
      {"histogram_atomics.cl", "histogram", 0, 2, 0, 0, 0, 0},
      {"gather.cl", "gather", 0, 2, 0, 1, 0, 0},
      {"spmv_csr.cl", "spmv", 1, 4, 0, 1, 1, 2},
      {"reduce_local.cl", "reduce", 1, 1, 0, 0, 2, 1},
      {"grid_stride.cl", "grid_stride", 0, 0, 2, 0, 0, 1},
      {"struct_access.cl", "particles", 0, 1, 4, 0, 0, 3},
      {"constant_mem.cl", "fir", 1, 3, 0, 0, 1, 3},
      {"uniform_branches.cl", "modes", 2, 4, 0, 0, 1, 2},
      {"collatz_while.cl", "collatz", 0, 2, 0, 0, 5, 0},
      {"double_math.cl", "dscale", 0, 2, 0, 0, 0, 4},
      {"loop_nest.cl", "nest", 2, 1, 1, 0, 3, 1},
      {"paper_2mat3d.cl", "mat3d", 0, 3, 0, 0, 5, 1},
      {"two_kernels.cl", "first", 0, 2, 0, 0, 0, 1},
      {"two_kernels.cl", "second", 1, 1, 0, 0, 0, 2},
      {"needs_defs.cl", "needs_defs", 0, 2, 0, 0, 4, 1},
      {"image_blur.cl", "blur", 2, 0, 0, 0, 2, 4},
  };
  for (const auto& e : table) {
    DYNAMIC_SECTION(e.file << ":" << e.kernel) {
      const auto k = kernel_of(e.file, e.kernel);
      CHECK(k.mem_constant == e.constant);
      CHECK(k.mem_continuous == e.continuous);
      CHECK(k.mem_stride == e.stride);
      CHECK(k.mem_random == e.random);
      CHECK(k.arith_int == e.arith_int);
      CHECK(k.arith_float == e.arith_float);
    }
  }
}

TEST_CASE("every global operation gets exactly one Table 1 class") {
  namespace fs = std::filesystem;
  int kernels = 0;
  for (const auto& entry : fs::directory_iterator(data_path(""))) {
    if (entry.path().extension() != ".cl") continue;
    const auto r = analyze_file(entry.path().filename().string());
    INFO(entry.path().filename().string());
    REQUIRE_FALSE(r.kernels.empty());
    for (const auto& k : r.kernels) {
      ++kernels;
      CHECK(k.mem_constant + k.mem_continuous + k.mem_stride + k.mem_random ==
            k.mem_global_loads + k.mem_global_stores + k.mem_global_atomics);
      CHECK(k.arith_special <= k.arith_float);
      CHECK(k.arith_vector <= k.arith_int + k.arith_float);
      CHECK(k.loops == k.loops_constant_trip + k.loops_symbolic_trip + k.loops_unknown_trip);
      CHECK(k.loops == int64_t(k.loop_list.size()));
      CHECK(k.branches_divergent <= k.branches);
      // Only the file that deliberately does not compile alone is partial.
      CHECK(k.complete == (entry.path().filename() != "needs_defs.cl"));
    }
  }
  CHECK(kernels >= 30);
}

TEST_CASE("local, private and __constant memory and atomics are counted apart") {
  const auto tile = kernel_of("local_tile.cl");
  CHECK(tile.mem_local_stores == 1);  // tile[lid] = ...
  CHECK(tile.mem_local_loads == 1);   // tile[k]
  CHECK(tile.barriers == 1);

  const auto priv = kernel_of("private_array.cl");
  CHECK(priv.mem_private_stores == 1);  // buf[k] = ...
  CHECK(priv.mem_private_loads == 1);   // buf[7 - k]
  CHECK(priv.mem_global_loads + priv.mem_global_stores == 2);

  const auto hist = kernel_of("histogram_atomics.cl");
  CHECK(hist.mem_global_atomics == 1);  // atomic_add(&bins[lid], ...)
  CHECK(hist.mem_local_atomics == 1);   // atomic_inc(&lbins[...])
  CHECK(hist.mem_local_stores == 1);
  CHECK(hist.mem_local_loads == 1);
  CHECK(hist.barriers == 2);

  const auto red = kernel_of("reduce_local.cl");
  CHECK(red.mem_local_loads == 3);
  CHECK(red.mem_local_stores == 2);

  const auto fir = kernel_of("constant_mem.cl");
  CHECK(fir.mem_constant_space == 2);  // coeffs[k] (program scope) and extra[0] (argument)
  CHECK(arg(fir, "extra").address_space == "constant");
}

TEST_CASE("trip counts: constant, symbolic (filled in at launch) and unknown") {
  const auto nest = kernel_of("loop_nest.cl");
  REQUIRE(nest.loop_list.size() == 4);
  CHECK(nest.loop_depth == 2);
  const auto& l0 = nest.loop_list[0].trip;
  CHECK(l0.kind == TripCount::Kind::symbolic);
  CHECK(l0.expr == "n*m");
  CHECK(l0.symbols == std::vector<std::string>{"m", "n"});
  CHECK(l0.evaluate({{"n", 6}, {"m", 7}}) == 42);
  CHECK_FALSE(l0.evaluate({{"n", 6}}).has_value());  // m missing
  CHECK(nest.loop_list[1].trip.expr == "n");
  CHECK(nest.loop_list[2].trip.kind == TripCount::Kind::unknown);  // j = i .. n depends on the outer loop
  CHECK(nest.loop_list[2].parent == 1);
  CHECK(nest.loop_list[2].depth == 2);
  CHECK(nest.loop_list[3].trip.kind == TripCount::Kind::constant);
  CHECK(nest.loop_list[3].trip.value == 4);  // k = 10, 7, 4, 1
  CHECK(nest.loops_symbolic_trip == 2);
  CHECK(nest.loops_unknown_trip == 1);
  CHECK(nest.loops_constant_trip == 1);

  const auto mat = kernel_of("paper_2mat3d.cl");
  REQUIRE(mat.loop_list.size() == 2);
  CHECK(mat.loop_list[0].induction == "y");
  CHECK(mat.loop_list[0].trip.expr == "NY");
  CHECK(mat.loop_list[1].trip.expr == "NX");
  CHECK(mat.loop_list[1].trip.evaluate({{"NX", 128}}) == 128);

  const auto paper = kernel_of("paper_example.cl");
  CHECK(paper.loop_list[1].trip.kind == TripCount::Kind::constant);
  CHECK(paper.loop_list[1].trip.value == 1024);  // the macro M

  const auto rows = kernel_of("pointer_arith.cl");
  CHECK(rows.loop_list[0].trip.expr == "cols");
  CHECK(rows.loop_list[1].trip.value == 16);

  const auto grid = kernel_of("grid_stride.cl");
  CHECK(grid.loop_list[0].trip.kind == TripCount::Kind::unknown);  // depends on get_global_id(0)
  CHECK(grid.loop_list[0].divergent);

  const auto spmv = kernel_of("spmv_csr.cl");
  CHECK(spmv.loop_list[0].trip.kind == TripCount::Kind::unknown);  // bounds loaded from rowptr
  CHECK(spmv.loop_list[0].divergent);

  const auto red = kernel_of("reduce_local.cl");
  CHECK(red.loop_list[0].trip.kind == TripCount::Kind::unknown);  // s >>= 1
  CHECK_FALSE(red.loop_list[0].divergent);                        // but uniform across work-items

  // Steps other than 1: a pointer walk, a stride-2 loop, an inclusive bound.
  const auto steps = dop::features::analyze(
      "__kernel void k(__global float* a, int n, int m) {\n"
      "  for (__global float* p = a; p < a + n; p++) *p = 0.0f;\n"
      "  for (int i = 0; i < n; i += 2) a[i] = 1.0f;\n"
      "  for (int i = 1; i <= 2 * m; i += 2) a[i] = 2.0f;\n"
      "  do { a[0] += 1.0f; } while (0);\n"
      "}\n",
      "steps.cl");
  REQUIRE(steps.kernels.size() == 1);
  const auto& sl = steps.kernels[0].loop_list;
  REQUIRE(sl.size() == 4);
  CHECK(sl[0].induction == "p");
  CHECK(sl[0].trip.expr == "n");
  CHECK(sl[1].trip.expr == "(n + 1)/2");
  CHECK(sl[1].trip.evaluate({{"n", 7}}) == 4);  // 0, 2, 4, 6
  CHECK(sl[2].trip.expr == "m");                // 1, 3, ..., 2m - 1
  CHECK(sl[3].trip.value == 1);                 // do { } while (0), the macro idiom

  const auto defs = kernel_of("needs_defs.cl");
  CHECK(defs.loop_list[0].trip.expr == "BLOCK");  // an undefined macro stays a named symbol
}

TEST_CASE("branches and divergence") {
  CHECK(kernel_of("vec_add.cl").branches == 1);
  CHECK(kernel_of("vec_add.cl").branches_divergent == 1);  // i < n
  const auto modes = kernel_of("uniform_branches.cl");
  CHECK(modes.branches == 4);  // if, else if, if in the loop, ?:
  CHECK(modes.branches_divergent == 0);
  const auto hist = kernel_of("histogram_atomics.cl");
  CHECK(hist.branches == 3);
  CHECK(hist.branches_divergent == 3);
  const auto collatz = kernel_of("collatz_while.cl");
  CHECK(collatz.branches_divergent == 1);  // v was loaded per work-item
  CHECK(collatz.loop_list[0].divergent);
  CHECK(kernel_of("transpose_2d.cl").branches_divergent == 1);
}

TEST_CASE("per-argument read/write flags, through helpers and atomics") {
  const auto h = kernel_of("helpers.cl");
  CHECK(arg(h, "a").access() == "read");
  CHECK(arg(h, "b").access() == "read");
  CHECK(arg(h, "out").access() == "write");
  CHECK(arg(h, "s").access() == "none");
  CHECK_FALSE(arg(h, "s").is_pointer);
  CHECK(h.args_read_only == 2);
  CHECK(h.args_write_only == 1);

  const auto hist = kernel_of("histogram_atomics.cl");
  CHECK(arg(hist, "bins").access() == "read_write");  // atomic
  CHECK(arg(hist, "data").access() == "read");
  CHECK(arg(hist, "lbins").address_space == "local");
  CHECK(hist.args_read_write == 1);  // bins only: local arguments are not buffers

  const auto scale = kernel_of("early_return.cl");
  CHECK(arg(scale, "x").access() == "read_write");
  CHECK(arg(scale, "x").type == "__global float *");

  const auto rows = kernel_of("pointer_arith.cl");
  CHECK(arg(rows, "m").access() == "write");

  const auto blur = kernel_of("image_blur.cl");  // images: flags through the helper, not memory operations
  CHECK(arg(blur, "src").address_space == "image");
  CHECK(arg(blur, "src").access() == "read");
  CHECK(arg(blur, "dst").access() == "write");
  CHECK(blur.image_ops == 4);
  CHECK(blur.arith_bitwise == 0);  // the sampler's CLK_... | CLK_... is a constant, not work
}

TEST_CASE("vector types, vector loads and math builtins") {
  const auto s4 = kernel_of("saxpy_float4.cl");
  CHECK(s4.vector_width_max == 4);
  CHECK(s4.arith_vector == 2);
  const auto c4 = kernel_of("vload_vstore.cl");
  CHECK(c4.vector_width_max == 4);
  CHECK(c4.arith_vector == 1);
  CHECK(c4.mem_global_loads == 2);  // vload4 counts once
  const auto d = kernel_of("double_math.cl");
  CHECK(d.arith_special == 2);  // sqrt, exp
  CHECK(kernel_of("vec_add.cl").vector_width_max == 1);
}

TEST_CASE("helper functions are inlined at each call site") {
  CHECK(kernel_of("helpers.cl").calls_inlined == 3);
  CHECK(kernel_of("two_kernels.cl", "second").calls_inlined == 1);
}

TEST_CASE("work dimensions") {
  CHECK(kernel_of("vec_add.cl").work_dim == 1);
  CHECK(kernel_of("gemm_2d.cl").work_dim == 2);
  CHECK(kernel_of("stencil_3d.cl").work_dim == 3);
  CHECK(kernel_of("paper_example.cl").work_dim == 0);
}

TEST_CASE("global bytes per work-item") {
  CHECK(kernel_of("vec_add.cl").global_bytes_per_item == Approx(12));
  CHECK(kernel_of("saxpy_float4.cl").global_bytes_per_item == Approx(48));
  const auto gemm = kernel_of("gemm_2d.cl");
  CHECK_FALSE(gemm.global_bytes_per_item.has_value());
  CHECK(gemm.global_bytes_per_item_expr == "8*K + 4");  // A and B per k iteration, C once
  CHECK(dop::expr::evaluate(gemm.global_bytes_per_item_expr, {{"K", 1000}}) == 8004);
  const auto mat = kernel_of("paper_2mat3d.cl");
  CHECK(mat.global_bytes_per_item_expr == "12*NY*NX");
  const auto spmv = kernel_of("spmv_csr.cl");
  CHECK(spmv.global_bytes_per_item_expr == "16*loop0 + 8");  // unknown trip counts stay named
}

TEST_CASE("robustness: bad input gives diagnostics and partial features, never a crash") {
  using dop::features::analyze;
  SECTION("empty and binary input") {
    CHECK(analyze("", "empty.cl").kernels.empty());
    const std::string junk("\x00\xff\x7f{{{((\"'\\", 12);
    const auto r = analyze(junk, "junk.cl");
    CHECK(r.kernels.empty());
    CHECK(r.has_errors());
  }
  SECTION("syntax error inside the kernel: file:line diagnostics, partial features") {
    const auto r = analyze(
        "__kernel void k(__global float* a) {\n  int i = get_global_id(0);\n  a[i] = a[i] +;\n"
        "  a[i+1] = 2.0f;\n}\n",
        "syntax.cl");
    REQUIRE(r.kernels.size() == 1);
    CHECK_FALSE(r.kernels[0].complete);
    REQUIRE(r.has_errors());
    CHECK(r.diagnostics[0].file == "syntax.cl");
    CHECK(r.diagnostics[0].line == 3);
    CHECK_THAT(r.diagnostics[0].str(), Catch::StartsWith("syntax.cl:3:"));
    CHECK(r.kernels[0].mem_global_stores >= 1);  // a[i+1] = 2.0f survives
  }
  SECTION("missing helper function: arguments counted, pointers assumed read and written") {
    const auto r = analyze(
        "__kernel void k(__global float* a, __global float* b) {\n  int i = get_global_id(0);\n"
        "  b[i] = missing(a, i) + a[i];\n}\n",
        "missing.cl");
    REQUIRE(r.kernels.size() == 1);
    CHECK(has_diagnostic(r, "missing"));
    CHECK(r.kernels[0].mem_continuous == 2);  // a[i], b[i]
    CHECK(arg(r.kernels[0], "a").access() == "read_write");
  }
  SECTION("declared but undefined helper: a warning") {
    const auto r = analyze(
        "float ext(__global float* p);\n__kernel void k(__global float* a) {\n"
        "  a[0] = ext(a);\n}\n",
        "ext.cl");
    REQUIRE(r.kernels.size() == 1);
    CHECK(r.kernels[0].complete);
    CHECK(has_diagnostic(r, "'ext', which has no definition"));
  }
  SECTION("unknown types and macros are guessed, and said so") {
    const auto r = analyze_file("needs_defs.cl");
    CHECK(has_diagnostic(r, "unknown type name 'DATA_TYPE' assumed to be float"));
    CHECK(has_diagnostic(r, "'BLOCK' taken as a symbolic integer constant"));
    Options no_guess;
    no_guess.guess_unknown_types = false;
    const auto raw = analyze_file("needs_defs.cl", no_guess);
    REQUIRE(raw.kernels.size() == 1);
    CHECK(raw.kernels[0].loops == 0);  // Clang drops the loop whose condition does not compile
  }
  SECTION("build options define what the file needs") {
    Options o;
    o.build_options = "-DDATA_TYPE=float -D BLOCK=8 -DALPHA=2";
    const auto r = analyze_file("needs_defs.cl", o);
    REQUIRE(r.kernels.size() == 1);
    CHECK_FALSE(r.has_errors());
    CHECK(r.kernels[0].complete);
    CHECK(r.kernels[0].loop_list[0].trip.value == 8);
  }
  SECTION("an input that crashes Clang 15 itself is reported, not fatal") {
    // `clang-15 -cc1 -x cl -fsyntax-only` segfaults on this at the end of the translation unit (found by fuzzing).
    const auto r = analyze("int i; float x[i;x[i", "clang_crash.cl");
    CHECK(r.kernels.empty());
    CHECK(has_diagnostic(r, "Clang crashed while parsing"));
    // And the process is still usable.
    CHECK(kernel_of("vec_add.cl").mem_continuous == 3);
  }
  SECTION("recursion is cut, not followed") {
    const auto r = analyze(
        "int f(int x) { return x > 0 ? f(x - 1) : 0; }\n"
        "__kernel void k(__global int* a) { a[0] = f(3); }\n",
        "rec.cl");
    REQUIRE(r.kernels.size() == 1);
    CHECK(r.kernels[0].mem_global_stores == 1);
  }
  SECTION("exponential call trees are bounded") {
    std::string src = "float f0(float x) { return x + 1.0f; }\n";
    for (int i = 1; i <= 24; ++i)
      src += "float f" + std::to_string(i) + "(float x) { return f" + std::to_string(i - 1) + "(x) + f" +
             std::to_string(i - 1) + "(x); }\n";
    src += "__kernel void k(__global float* a) { a[0] = f24(a[1]); }\n";
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = analyze(src, "tree.cl");
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
    REQUIRE(r.kernels.size() == 1);
    CHECK_FALSE(r.kernels[0].complete);
    CHECK(has_diagnostic(r, "inlining limit"));
  }
  SECTION("deep nesting is cut") {
    std::string e = "a[0]";
    for (int i = 0; i < 400; ++i) e = "- " + e;  // 400 nested negations (no brackets: Clang allows 256)
    const auto r = analyze("__kernel void k(__global float* a) { a[1] = " + e + "; }\n", "deep.cl");
    REQUIRE(r.kernels.size() == 1);
    CHECK_FALSE(r.kernels[0].complete);
    CHECK(has_diagnostic(r, "nesting deeper"));
  }
  SECTION("time limit: a huge kernel is cut off and reported, not waited for") {
    std::string src = "__kernel void big(__global float* a, int n) {\n  int i = get_global_id(0);\n";
    for (int s = 0; s < 20000; ++s)
      src += "  if (a[i + " + std::to_string(s) + "] > 0.0f) a[i] += a[i * n + " + std::to_string(s) + "];\n";
    src += "}\n";
    Options o;
    o.time_limit_ms = 20;
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = analyze(src, "big.cl", o);
    const auto elapsed = std::chrono::steady_clock::now() - t0;
    CHECK(elapsed < std::chrono::seconds(5));
    CHECK(has_diagnostic(r, "timed out"));
    for (const auto& k : r.kernels) CHECK_FALSE(k.complete);
  }
}

TEST_CASE("Options::kernel selects one kernel, kernels are reported in source order") {
  Options o;
  o.kernel = "second";
  const auto r = analyze_file("two_kernels.cl", o);
  REQUIRE(r.kernels.size() == 1);
  CHECK(r.kernels[0].name == "second");
  const auto all = analyze_file("two_kernels.cl");
  REQUIRE(all.kernels.size() == 2);
  CHECK(all.kernels[0].name == "first");
  CHECK(all.kernels[0].line < all.kernels[1].line);
}

TEST_CASE("stable keys: Table 1 first, JSON and CSV agree") {
  const auto& keys = dop::features::feature_keys();
  REQUIRE(keys.size() > 6);
  const std::vector<std::string> table1 = {"mem_constant", "mem_continuous", "mem_stride",
                                           "mem_random",   "arith_int",      "arith_float"};
  CHECK(std::vector<std::string>(keys.begin(), keys.begin() + 6) == table1);
  CHECK(keys.back() == "global_bytes_per_item_expr");

  const auto r = analyze_file("gemm_2d.cl");
  const auto j = nlohmann::ordered_json::parse(dop::features::to_json(r, "gemm_2d.cl"));
  REQUIRE(j["kernels"].size() == 1);
  const auto& f = j["kernels"][0]["features"];
  std::vector<std::string> json_keys;
  for (auto it = f.begin(); it != f.end(); ++it) json_keys.push_back(it.key());
  CHECK(json_keys == keys);
  CHECK(f["mem_stride"] == 1);
  CHECK(f["global_bytes_per_item"].is_null());
  CHECK(j["kernels"][0]["loops"][0]["trip"]["expr"] == "K");
  CHECK(j["kernels"][0]["args"][0]["access"] == "read");

  const std::string header = dop::features::csv_header();
  const std::string row = dop::features::to_csv_row(r.kernels[0]);
  CHECK(std::count(header.begin(), header.end(), ',') == std::count(row.begin(), row.end(), ','));
  CHECK_THAT(header, Catch::StartsWith("file,kernel,mem_constant,mem_continuous,mem_stride,mem_random,arith_int,"
                                       "arith_float,"));
  CHECK_THAT(row, Catch::Contains(",gemm,0,2,1,0,6,2,"));
  CHECK(r.kernels[0].values().size() == keys.size() - 1);  // all but the expression
}

TEST_CASE("expressions of trip counts evaluate with launch values") {
  TripCount t;
  t.kind = TripCount::Kind::symbolic;
  t.expr = "N - 10";
  CHECK(t.evaluate({{"N", 4}}) == 0);  // a negative count means the loop does not run
}

TEST_CASE("a call to a function the file does not declare is kept: pointer arguments read and written, a warning") {
  // The unbraced loop whose body is the call used to vanish with it (all-zero features), and so did the braced one's
  // call; the rest of the kernel is analysed as written.
  const std::string src =
      "__kernel void scale_rows(__global float* out, __global const float* in, int n) {\n"
      "  const int i = get_global_id(0);\n"
      "  for (int j = 0; j < n; j++)\n"
      "    scale_row(out, in, i * n + j);\n"
      "  if (i == 0) {\n"
      "    finish(out);\n"
      "  }\n"
      "  out[i] += in[i];\n"
      "}\n";
  const auto r = dop::features::analyze(src, "scale_rows.cl");
  REQUIRE(r.kernels.size() == 1);
  const auto& k = r.kernels[0];
  CHECK(k.loops == 1);
  CHECK(k.loops_symbolic_trip == 1);
  REQUIRE(k.loop_list.size() == 1);
  CHECK(k.loop_list[0].line == 3);
  CHECK(k.loop_list[0].trip.expr == "n");
  CHECK(k.branches == 1);
  CHECK(k.mem_global_loads == 2);  // out[i] and in[i] of line 8
  CHECK(k.mem_global_stores == 1);
  CHECK(arg(k, "out").access() == "read_write");
  CHECK(arg(k, "in").access() == "read_write");  // assumed: what scale_row does with it is unknown
  CHECK_FALSE(k.complete);                       // the file does not compile: Clang's error stays
  for (const auto& a : k.footprint.args) {
    INFO(a.name);
    CHECK(a.whole);
  }
  // The warnings name the function, the file and the line of the call.
  auto warned = [&](const std::string& fn, unsigned line) {
    for (const auto& d : r.diagnostics)
      if (d.severity == dop::features::Diagnostic::Severity::warning && d.file == "scale_rows.cl" && d.line == line &&
          d.message.find("call to '" + fn + "', which is not declared") != std::string::npos &&
          d.message.find("pointer arguments are assumed read and written") != std::string::npos)
        return true;
    return false;
  };
  CHECK(warned("scale_row", 4));
  CHECK(warned("finish", 6));
  CHECK(has_diagnostic(r, "use of undeclared identifier 'scale_row'"));
  // The guessed declarations' own errors are not the file's.
  for (const auto& d : r.diagnostics) CHECK(d.file == "scale_rows.cl");
}

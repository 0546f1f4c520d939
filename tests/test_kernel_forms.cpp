// The kernel-forms resolver (dop/kernel_forms.hpp) on the real kernels of kernels/: bundles found by kernel name,
// source and build options (the file name breaks ties), the reason when a bundle of the kernel differs, the
// footprint, code features and argument names a bundle gives, no bundle at all, a provider for kernels without one,
// and what apply_forms puts into ExecutorOptions. Runtime tier; the analysis tier's provider (transform/) is tested
// at the end when it is built.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "dop/bundle.hpp"
#include "dop/kernel_forms.hpp"
#include "dop/runtime.hpp"
#if DOP_ANALYSIS
#include "dop/transform.hpp"
#endif

using namespace dop;

namespace {

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

const std::string kAtaxFile = std::string(DOP_SOURCE_DIR) + "/kernels/atax/atax.cl";

// The features of atax1 as `dop bundle` records them, cut down to a few code features, the argument names and the
// footprint (only tmp, the output, is bounded here: the others stay whole).
const char* kAtax1Features = R"json({
  "kernel": "atax1",
  "features": {"mem_continuous": 3, "arith_float": 2, "mem_global_stores": 1, "loop_trip": "n"},
  "args": [{"name": "A"}, {"name": "x"}, {"name": "tmp"}, {"name": "n"}],
  "footprint": {
    "args": {"tmp": {"whole": false, "accesses": [{"write": true, "bytes": 4, "terms": [[4, "get_global_id(0)"]]}]}},
    "ranges": {"get_global_id(0)": ["gid_lo_0", "gid_hi_0"]}
  }
})json";

// A bundle of a kernel of atax.cl, as `dop bundle` would make it (the malleable form is a stand-in with the two
// extra arguments: these tests do not run it).
Bundle atax_bundle(const std::string& kernel, const std::string& file = "kernels/atax/atax.cl") {
  Bundle b;
  b.file = file;
  b.kernel = kernel;
  b.source = read(kAtaxFile);
  b.malleable_source = "// malleable " + kernel + " of " + file + " (int dop_gpu_mod, int dop_gpu_alloc)\n";
  b.features_json = kernel == "atax1" ? kAtax1Features : "null";
  b.made_by = "test_kernel_forms";
  return b;
}

// A fresh folder of bundles under the build folder.
std::string bundle_dir(const std::string& name) {
  const auto d = std::filesystem::path(DOP_BINARY_DIR) / "test_kernel_forms_tmp" / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

KernelSource atax(const std::string& kernel, const std::string& options = {}) {
  return {read(kAtaxFile), kernel, options, kAtaxFile};
}

// A provider that makes recognisable forms and counts what it was asked for.
struct StubProvider : FormsProvider {
  mutable int malleables = 0, analyses = 0;
  std::pair<std::string, std::string> malleable(const KernelSource& k) const override {
    ++malleables;
    return {"// made from the source of " + k.kernel + " (dop_gpu_mod, dop_gpu_alloc)", ""};
  }
  std::string features_json(const KernelSource& k) const override {
    ++analyses;
    if (k.kernel != "atax1") throw std::runtime_error(k.file + ": no kernel '" + k.kernel + "'");
    return kAtax1Features;
  }
};

}  // namespace

TEST_CASE("kernel forms: a matching bundle gives its malleable form, footprint, code features and argument names",
          "[forms]") {
  const std::string dir = bundle_dir("match");
  save_bundle(atax_bundle("atax1"), dir + "/atax1.json");
  save_bundle(atax_bundle("atax2"), dir + "/atax2.json");
  const KernelFormsResolver forms({{dir}, nullptr, {}, nullptr});
  REQUIRE(forms.bundles().size() == 2);

  const KernelForms f = forms.resolve(atax("atax1"));
  CHECK(f.origin == dir + "/atax1.json");
  CHECK_THAT(f.malleable_source, Catch::Contains("malleable atax1"));
  CHECK(f.malleable_note.empty());
  REQUIRE(f.footprint.args.count("tmp") == 1);
  CHECK_FALSE(f.footprint.args.at("tmp").whole);
  CHECK(f.footprint.atoms == std::vector<std::string>{"get_global_id(0)"});
  REQUIRE(f.code);
  CHECK(f.code->values.at("mem_continuous") == 3);
  CHECK(f.code->exprs.at("loop_trip") == "n");
  CHECK(f.arg_names == std::vector<std::string>{"A", "x", "tmp", "n"});

  // A bundle without features: the malleable form, no footprint, and no code features, saying why.
  const KernelForms g = forms.resolve(atax("atax2"));
  CHECK(g.origin == dir + "/atax2.json");
  CHECK_THAT(g.malleable_source, Catch::Contains("malleable atax2"));
  CHECK(g.footprint.empty());
  CHECK_FALSE(g.code);
  CHECK(g.arg_names.empty());
  CHECK_THROWS_WITH(g.code_features(), Catch::Contains(dir + "/atax2.json"));

  // Into executor options: the form, the footprint and, for a model, the code features.
  ExecutorOptions o;
  o.model = AutoModel{};
  apply_forms(f, o);
  CHECK(o.malleable_source == f.malleable_source);
  CHECK(o.footprint.args.count("tmp") == 1);
  CHECK(o.model->code.values.at("arith_float") == 2);
  ExecutorOptions p;
  p.model = AutoModel{};
  CHECK_THROWS_WITH(apply_forms(g, p), Catch::Contains(dir + "/atax2.json"));
  ExecutorOptions q;  // without a model the code features are not needed
  CHECK_NOTHROW(apply_forms(g, q));
  CHECK(q.malleable_source == g.malleable_source);

  // The same bundle given by hand (dop run --bundle).
  const KernelForms h = forms_from_bundle(atax_bundle("atax1"), "given.json", atax("atax1"));
  CHECK(h.origin == "given.json");
  CHECK(h.arg_names == f.arg_names);
  CHECK_THROWS_AS(forms_from_bundle(atax_bundle("atax1"), "given.json", atax("atax1", "-DX=1")), BundleError);
}

TEST_CASE("kernel forms: a bundle of the kernel whose source or build options differ is the reason there are none",
          "[forms]") {
  const std::string dir = bundle_dir("differs");
  Bundle stale = atax_bundle("atax1");
  stale.source += "// edited after the bundle was made\n";
  save_bundle(stale, dir + "/atax1.json");
  const KernelFormsResolver forms({{dir}, nullptr, {}, nullptr});

  // The kernel is launched from the current source: the bundle is stale.
  KernelSource k = atax("atax1");
  const KernelForms f = forms.resolve(k);
  CHECK(f.origin.empty());
  CHECK(f.malleable_source.empty());
  CHECK_THAT(f.malleable_note,
             Catch::Contains(dir + "/atax1.json") && Catch::Contains("another source of kernel 'atax1'"));
  CHECK(f.footprint.empty());
  CHECK_THROWS_WITH(f.code_features(), Catch::Contains(dir + "/atax1.json") && Catch::Contains("another source"));

  // The bundle's source, other build options.
  k.source = stale.source;
  k.build_options = "-DN=4";
  CHECK_THAT(forms.resolve(k).malleable_note, Catch::Contains("build options '', the kernel is built with '-DN=4'"));
  // And with its options it matches.
  k.build_options.clear();
  CHECK(forms.resolve(k).origin == dir + "/atax1.json");
}

TEST_CASE("kernel forms: among matching bundles the one of the kernel's file name wins", "[forms]") {
  const std::string dir = bundle_dir("tie");
  save_bundle(atax_bundle("atax1", "copy/of/other.cl"), dir + "/a.json");  // first in path order
  save_bundle(atax_bundle("atax1", "elsewhere/atax.cl"), dir + "/b.json");
  const KernelFormsResolver forms({{dir}, nullptr, {}, nullptr});
  CHECK(forms.resolve(atax("atax1")).origin == dir + "/b.json");
  // A captured launch has no file name: the first in path order.
  KernelSource captured = atax("atax1");
  captured.file.clear();
  CHECK(forms.resolve(captured).origin == dir + "/a.json");
}

TEST_CASE("kernel forms: no bundle, no provider: no forms, and the notes say why", "[forms]") {
  const std::string dir = bundle_dir("none");
  save_bundle(atax_bundle("atax1"), dir + "/atax1.json");
  const KernelSource gemm = {read(std::string(DOP_SOURCE_DIR) + "/kernels/gemm/gemm.cl"), "gemm", "", "gemm.cl"};
  const KernelForms f = KernelFormsResolver({{dir}, nullptr, {}, nullptr}).resolve(gemm);
  CHECK(f.origin.empty());
  CHECK_THAT(f.malleable_note, Catch::Contains("no bundle of kernel 'gemm' of gemm.cl in " + dir));
  CHECK_THAT(f.no_code, Catch::Contains("no bundle of kernel 'gemm'"));
  const KernelForms g = KernelFormsResolver().resolve(gemm);
  CHECK_THAT(g.malleable_note, Catch::Contains("no analysis tier"));
  ExecutorOptions o;
  o.model = AutoModel{};
  CHECK_THROWS_WITH(apply_forms(g, o), Catch::Contains("no code features for kernel 'gemm'"));
  // A folder that is not one is named.
  CHECK_THROWS_WITH(KernelFormsResolver({{dir + "/missing"}, nullptr, {}, nullptr}), Catch::Contains(dir + "/missing"));
}

TEST_CASE("kernel forms: a provider makes the forms of kernels without a bundle, once, those wanted", "[forms]") {
  const std::string dir = bundle_dir("provider");
  save_bundle(atax_bundle("atax2"), dir + "/atax2.json");
  auto stub = std::make_shared<StubProvider>();
  const KernelFormsResolver forms({{dir}, stub, {}, nullptr});
  const KernelForms f = forms.resolve(atax("atax1"));
  CHECK(f.origin == "analysis");
  CHECK_THAT(f.malleable_source, Catch::Contains("made from the source of atax1"));
  CHECK(f.footprint.args.count("tmp") == 1);
  CHECK(f.arg_names.size() == 4);
  REQUIRE(f.code);
  forms.resolve(atax("atax1"));  // memoised
  CHECK(stub->malleables == 1);
  CHECK(stub->analyses == 1);
  // A bundle comes first.
  CHECK(forms.resolve(atax("atax2")).origin == dir + "/atax2.json");
  CHECK(stub->analyses == 1);
  // A failed analysis leaves the features out and says why.
  const KernelForms g = forms.resolve(atax("nope"));
  CHECK(g.footprint.empty());
  CHECK_THAT(g.no_code, Catch::Contains("no kernel 'nope'"));
  // Only the malleable form.
  auto only = std::make_shared<StubProvider>();
  const KernelForms h = KernelFormsResolver({{}, only, {true, false}, nullptr}).resolve(atax("atax1"));
  CHECK_FALSE(h.malleable_source.empty());
  CHECK(h.footprint.empty());
  CHECK(only->analyses == 0);
}

#if DOP_ANALYSIS
TEST_CASE("kernel forms: the analysis tier's provider makes them from the source", "[forms][analysis]") {
  const KernelFormsResolver forms({{}, transform::forms_provider(), {}, nullptr});
  const KernelForms f = forms.resolve(atax("atax1"));
  CHECK(f.origin == "analysis");
  CHECK_THAT(f.malleable_source, Catch::Contains(transform::gpu_mod_arg) && Catch::Contains(transform::gpu_alloc_arg));
  REQUIRE(f.footprint.args.count("tmp") == 1);
  CHECK_FALSE(f.footprint.args.at("tmp").whole);
  CHECK(f.arg_names == std::vector<std::string>{"A", "x", "tmp", "n"});
  REQUIRE(f.code);
  CHECK(f.code->values.at("mem_continuous") == 3);
  // What `dop bundle` would record is what the provider makes: the bundle's forms are the same.
  Bundle b = atax_bundle("atax1");
  b.malleable_source = f.malleable_source;
  b.features_json = f.features_json;
  const KernelForms g = forms_from_bundle(b, "atax1.json", atax("atax1"));
  CHECK(g.malleable_source == f.malleable_source);
  CHECK(g.arg_names == f.arg_names);
  CHECK(g.footprint.atoms == f.footprint.atoms);
  // A kernel the file does not have: the analysis says so, and the malleable form's reason too.
  const KernelForms h = forms.resolve(atax("nope"));
  CHECK(h.malleable_source.empty());
  CHECK_FALSE(h.malleable_note.empty());
  CHECK_THAT(h.no_code, Catch::Contains("no kernel 'nope'"));
}
#endif

// The synthetic generator is ground truth for the static feature extractor (Dopia Table 1): the features extracted
// from every generated kernel must agree with what its parameters imply. Built only when the dop_features target
// exists (analysis tier).
#include <catch2/catch.hpp>

#include <iostream>
#include <map>
#include <string>

#include "dop/features.hpp"
#include "dop/synthetic.hpp"
#include "footprint_eval.hpp"

namespace syn = dop::synthetic;

namespace {

// Feature name -> count for kernel `kernel` of `source`.
std::map<std::string, double> extract_features(const std::string& source, const std::string& kernel) {
  dop::features::Options o;
  o.kernel = kernel;
  const auto r = dop::features::analyze(source, kernel + ".cl", o);
  REQUIRE(r.kernels.size() == 1);
  const auto& k = r.kernels[0];
  return {{"mem_constant", double(k.mem_constant)}, {"mem_continuous", double(k.mem_continuous)},
          {"mem_stride", double(k.mem_stride)},     {"mem_random", double(k.mem_random)},
          {"arith_int", double(k.arith_int)},       {"arith_float", double(k.arith_float)}};
}

void check_program(const syn::Params& p) {
  const std::string kernel = syn::program_name(p);
  INFO(kernel);
  const auto f = extract_features(syn::kernel_source(p), kernel);
  const syn::ImpliedFeatures want = syn::implied_features(p);
  CHECK(f.at("mem_stride") >= want.mem_stride);          // δ transposed reads
  CHECK(f.at("mem_random") >= want.mem_random);          // ε reads through the index array
  CHECK(f.at("mem_constant") >= want.mem_constant);      // θ reads at a constant address
  CHECK(f.at("mem_continuous") >= want.mem_continuous);  // continuous terms, Idx[i], the output
  if (want.data_is_float) {
    CHECK(f.at("arith_float") >= want.arith_data);
  } else {
    CHECK(f.at("arith_int") >= want.arith_data);
    CHECK(f.at("arith_float") == 0);  // int workloads have no floating-point operation at all
  }
  // A kernel without a given access kind must not report it (the extractor must not see strides everywhere).
  // Not for _lm, whose cooperative store computes its address with / and %.
  if (!p.local_mem) {
    if (p.delta == 0) CHECK(f.at("mem_stride") == 0);
    if (p.epsilon == 0) CHECK(f.at("mem_random") == 0);
    if (p.theta == 0) CHECK(f.at("mem_constant") == 0);
  }
}

}  // namespace

TEST_CASE("synthetic/features: the 204 paper programs have the features their parameters imply") {
  std::map<std::string, syn::Params> programs;
  for (const auto& p : syn::paper_set()) programs.emplace(syn::program_name(p), p);
  REQUIRE(programs.size() == 204);
  for (const auto& [name, p] : programs) check_program(p);
}

TEST_CASE("synthetic/features: extension programs too") {
  std::map<std::string, syn::Params> programs;
  const auto set = syn::extended_set();
  for (size_t i = syn::paper_set().size(); i < set.size(); ++i) programs.emplace(syn::program_name(set[i]), set[i]);
  for (const auto& [name, p] : programs) check_program(p);
}

TEST_CASE("synthetic/features: a sample of the paper programs has well-formed footprints") {
  const auto all = syn::paper_set();
  int n = 0, whole = 0, args = 0;
  for (size_t i = 0; i < all.size(); i += 9) {
    const auto& p = all[i];
    const std::string kernel = syn::program_name(p);
    dop::features::Options o;
    o.kernel = kernel;
    const auto r = dop::features::analyze(syn::kernel_source(p), kernel + ".cl", o);
    REQUIRE(r.kernels.size() == 1);
    const auto k = nlohmann::ordered_json::parse(dop::features::to_json(r.kernels[0]));
    INFO(kernel << ": " << k.at("footprint").dump());
    CHECK(dop::test::footprint_problem(k, dop::test::generic_values(k)) == "");
    if (n == 0) std::cout << kernel << " footprint:\n" << k.at("footprint").dump(2) << "\n";
    for (const auto& [name, a] : k.at("footprint").at("args").items()) {
      ++args;
      if (a.at("whole").get<bool>()) {
        ++whole;
        std::cout << "whole: " << kernel << "." << name << ": " << a.at("why").get<std::string>() << "\n";
      }
    }
    ++n;
  }
  std::cout << n << " synthetic kernels, " << whole << " of " << args << " arguments whole\n";
  CHECK(n >= 20);
}

// The size-expression grammar (expr/, dop/expr.hpp): what `dop features` writes and the analysis, the predictor, the
// runtime's footprints and the trainer evaluate. Links dop_expr only.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include "dop/expr.hpp"

using dop::expr::evaluate;

TEST_CASE("expressions evaluate with C integer arithmetic", "[expr]") {
  CHECK(evaluate("2 * (N + 1) / 3", {{"N", 4}}) == 3);
  CHECK(evaluate("N*M + 2*(K - 1)/4", {{"N", 3}, {"M", 5}, {"K", 9}}) == 19);
  CHECK(evaluate("-7 / 2", {}) == -3);  // C integer division
  CHECK(evaluate("-7/2", {}) == -3);
  CHECK(evaluate("+4 - -2", {}) == 6);
  CHECK(evaluate("s.n - 1", {{"s.n", 10}}) == 9);  // struct members
  CHECK(evaluate("9223372036854775807", {}) == INT64_MAX);
}

TEST_CASE("expression errors name the problem", "[expr]") {
  CHECK_THROWS_WITH(evaluate("M + 1", {{"N", 1}}), Catch::Contains("unknown name 'M'"));
  CHECK_THROWS_WITH(evaluate("1 / (N - N)", {{"N", 3}}), Catch::Contains("division by zero"));
  CHECK_THROWS_WITH(evaluate("2 *", {}), Catch::Contains("unexpected end"));
  CHECK_THROWS_WITH(evaluate("(1", {}), Catch::Contains("missing ')'"));
  CHECK_THROWS_WITH(evaluate("1 2", {}), Catch::Contains("unexpected '2'"));
  CHECK_THROWS_AS(evaluate("N +", {{"N", 1}}), std::invalid_argument);
  CHECK_THROWS_AS(evaluate("X", {}), std::invalid_argument);
  CHECK_THROWS_AS(evaluate("1/0", {}), std::invalid_argument);
}

TEST_CASE("expressions refuse overflow and deep nesting", "[expr]") {
  CHECK_THROWS_WITH(evaluate("9223372036854775807 + 1", {}), Catch::Contains("overflow"));
  CHECK_THROWS_WITH(evaluate("9223372036854775807 * 2", {}), Catch::Contains("overflow"));
  CHECK_THROWS_WITH(evaluate("9223372036854775808", {}), Catch::Contains("overflow"));
  CHECK_THROWS_WITH(evaluate("-N", {{"N", INT64_MIN}}), Catch::Contains("overflow"));
  CHECK(evaluate(std::string(200, '(') + "1" + std::string(200, ')'), {}) == 1);
  CHECK_THROWS_WITH(evaluate(std::string(201, '(') + "1" + std::string(201, ')'), {}),
                    Catch::Contains("nested too deeply"));
}

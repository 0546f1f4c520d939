// The size-expression grammar (dop/expr.hpp): a recursive-descent parser that evaluates as it parses, in 128-bit
// arithmetic checked against int64_t.
#include "dop/expr.hpp"

#include <cctype>
#include <climits>
#include <stdexcept>

namespace dop::expr {

namespace {
class Parser {
 public:
  Parser(const std::string& s, const std::map<std::string, int64_t>& v) : s_(s), v_(v) {}
  int64_t run() {
    const int64_t r = sum();
    skip();
    if (i_ != s_.size()) fail("unexpected '" + std::string(1, s_[i_]) + "'");
    return r;
  }

 private:
  [[noreturn]] void fail(const std::string& m) const {
    throw std::invalid_argument("expression '" + s_ + "': " + m + " at offset " + std::to_string(i_));
  }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  static int64_t checked(__int128 r, const Parser& p) {
    if (r > INT64_MAX || r < INT64_MIN) p.fail("integer overflow");
    return int64_t(r);
  }
  int64_t sum() {
    int64_t r = product();
    for (;;) {
      skip();
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) {
        const char op = s_[i_++];
        const int64_t b = product();
        r = checked(op == '+' ? __int128(r) + b : __int128(r) - b, *this);
      } else {
        return r;
      }
    }
  }
  int64_t product() {
    int64_t r = unary();
    for (;;) {
      skip();
      if (i_ < s_.size() && (s_[i_] == '*' || s_[i_] == '/')) {
        const char op = s_[i_++];
        const int64_t b = unary();
        if (op == '*') {
          r = checked(__int128(r) * b, *this);
        } else {
          if (b == 0) fail("division by zero");
          r = checked(__int128(r) / b, *this);
        }
      } else {
        return r;
      }
    }
  }
  int64_t unary() {
    skip();
    if (i_ < s_.size() && s_[i_] == '-') {
      ++i_;
      return checked(-__int128(unary()), *this);
    }
    if (i_ < s_.size() && s_[i_] == '+') {
      ++i_;
      return unary();
    }
    return primary();
  }
  int64_t primary() {
    skip();
    if (i_ >= s_.size()) fail("unexpected end");
    const char c = s_[i_];
    if (c == '(') {
      ++i_;
      if (++depth_ > 200) fail("nested too deeply");
      const int64_t r = sum();
      --depth_;
      skip();
      if (i_ >= s_.size() || s_[i_] != ')') fail("missing ')'");
      ++i_;
      return r;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      __int128 r = 0;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
        r = r * 10 + (s_[i_++] - '0');
        if (r > INT64_MAX) fail("integer overflow");
      }
      return int64_t(r);
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const size_t b = i_;
      while (i_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_' || s_[i_] == '.'))  // s.n: members
        ++i_;
      const std::string name = s_.substr(b, i_ - b);
      const auto it = v_.find(name);
      if (it == v_.end()) throw std::invalid_argument("expression '" + s_ + "': unknown name '" + name + "'");
      return it->second;
    }
    fail("unexpected '" + std::string(1, c) + "'");
  }
  const std::string& s_;
  const std::map<std::string, int64_t>& v_;
  size_t i_ = 0;
  int depth_ = 0;
};
}  // namespace

int64_t evaluate(const std::string& expr, const std::map<std::string, int64_t>& values) {
  return Parser(expr, values).run();
}

}  // namespace dop::expr

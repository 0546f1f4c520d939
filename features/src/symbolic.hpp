// Symbolic integer values for the address analysis: polynomials with int64 coefficients over atoms (loop iteration
// counters, work-item functions, kernel arguments, opaque values). Internal to features/.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace dop::features::detail {

/// What a value may vary with: work-item ids along dimensions 0..2 (bits of `wi`) and loop iterations (loop ids).
struct Deps {
  uint8_t wi = 0;
  std::vector<int> loops;  ///< sorted, unique
  void merge(const Deps& o);
  void add_loop(int l);
  void remove_loop(int l);
  bool has_loop(int l) const;
  bool empty() const { return wi == 0 && loops.empty(); }
};

enum class AtomKind : uint8_t {
  iter,       ///< iteration counter of a loop (0, 1, 2, ...)
  work_item,  ///< get_global_id(d) / get_local_id(d): varies with the work-item
  launch,     ///< launch constants: group id, sizes, offsets, work_dim (uniform in a work-group)
  param,      ///< a kernel scalar argument (or a field of a struct argument)
  symbol,     ///< an undeclared identifier (e.g. a macro the file does not define)
  quot,       ///< floor(a / b) of two polynomials (kept so that i/N*N + i%N folds back to i)
  opaque,     ///< anything else: loaded values, non-affine results, merged values
};

struct Atom {
  AtomKind kind = AtomKind::opaque;
  std::string name;  ///< printable form (params, launch, quot, symbol); empty for opaque
  Deps deps;
  bool loaded = false;      ///< opaque value read from memory
  bool renderable = false;  ///< can appear in a launch-time expression (params, launch, symbols, their quotients)
};

using AtomId = uint32_t;

class Atoms {
 public:
  AtomId intern(AtomKind kind, const std::string& key, const std::string& name, const Deps& deps, bool renderable);
  AtomId fresh(const Deps& deps, bool loaded = false);
  const Atom& operator[](AtomId id) const { return atoms_[id]; }
  size_t size() const { return atoms_.size(); }

 private:
  std::vector<Atom> atoms_;
  std::unordered_map<std::string, AtomId> interned_;
};

/// Polynomial with int64 coefficients. Overflow or too large a polynomial sets `bad`; callers replace bad results
/// by an opaque atom with the operands' dependences.
class Poly {
 public:
  using Monomial = std::vector<AtomId>;  ///< sorted atom ids, repeated for powers; empty = constant term

  Poly() = default;
  static Poly constant(int64_t c);
  static Poly atom(AtomId a);

  bool bad() const { return bad_; }
  bool is_zero() const { return !bad_ && terms_.empty(); }
  bool is_constant() const {
    return !bad_ && (terms_.empty() || (terms_.size() == 1 && terms_.begin()->first.empty()));
  }
  int64_t constant_value() const;  ///< the constant term
  const std::map<Monomial, int64_t>& terms() const { return terms_; }

  Poly operator+(const Poly& o) const;
  Poly operator-(const Poly& o) const;
  Poly operator*(const Poly& o) const;
  Poly operator-() const;
  /// Exact division by a constant when every coefficient divides; bad otherwise.
  Poly exact_div(int64_t d) const;
  bool operator==(const Poly& o) const { return bad_ == o.bad_ && terms_ == o.terms_; }
  bool operator!=(const Poly& o) const { return !(*this == o); }

  Deps deps(const Atoms& atoms) const;
  bool renderable(const Atoms& atoms) const;
  std::string str(const Atoms& atoms) const;
  std::string key() const;  ///< structural key (atom ids), for interning quotients

  static constexpr size_t kMaxTerms = 48;
  static constexpr size_t kMaxDegree = 6;

 private:
  void add_term(const Monomial& m, int64_t c);
  std::map<Monomial, int64_t> terms_;
  bool bad_ = false;
};

}  // namespace dop::features::detail

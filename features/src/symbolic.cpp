#include "symbolic.hpp"

#include <algorithm>

namespace dop::features::detail {

void Deps::merge(const Deps& o) {
  wi |= o.wi;
  if (o.loops.empty()) return;
  std::vector<int> out;
  out.reserve(loops.size() + o.loops.size());
  std::set_union(loops.begin(), loops.end(), o.loops.begin(), o.loops.end(), std::back_inserter(out));
  loops.swap(out);
}

void Deps::add_loop(int l) {
  auto it = std::lower_bound(loops.begin(), loops.end(), l);
  if (it == loops.end() || *it != l) loops.insert(it, l);
}

void Deps::remove_loop(int l) {
  auto it = std::lower_bound(loops.begin(), loops.end(), l);
  if (it != loops.end() && *it == l) loops.erase(it);
}

bool Deps::has_loop(int l) const { return std::binary_search(loops.begin(), loops.end(), l); }

AtomId Atoms::intern(AtomKind kind, const std::string& key, const std::string& name, const Deps& deps,
                     bool renderable) {
  auto it = interned_.find(key);
  if (it != interned_.end()) return it->second;
  Atom a;
  a.kind = kind;
  a.name = name;
  a.deps = deps;
  a.renderable = renderable;
  atoms_.push_back(std::move(a));
  const auto id = AtomId(atoms_.size() - 1);
  interned_.emplace(key, id);
  return id;
}

AtomId Atoms::fresh(const Deps& deps, bool loaded) {
  Atom a;
  a.kind = AtomKind::opaque;
  a.deps = deps;
  a.loaded = loaded;
  atoms_.push_back(std::move(a));
  return AtomId(atoms_.size() - 1);
}

Poly Poly::constant(int64_t c) {
  Poly p;
  if (c != 0) p.terms_[{}] = c;
  return p;
}

Poly Poly::atom(AtomId a) {
  Poly p;
  p.terms_[{a}] = 1;
  return p;
}

int64_t Poly::constant_value() const {
  auto it = terms_.find({});
  return it == terms_.end() ? 0 : it->second;
}

void Poly::add_term(const Monomial& m, int64_t c) {
  if (bad_ || c == 0) return;
  auto it = terms_.find(m);
  if (it == terms_.end()) {
    if (terms_.size() >= kMaxTerms) {
      bad_ = true;
      return;
    }
    terms_.emplace(m, c);
    return;
  }
  int64_t sum = 0;
  if (__builtin_add_overflow(it->second, c, &sum)) {
    bad_ = true;
    return;
  }
  if (sum == 0)
    terms_.erase(it);
  else
    it->second = sum;
}

Poly Poly::operator+(const Poly& o) const {
  Poly r = *this;
  r.bad_ = bad_ || o.bad_;
  for (const auto& [m, c] : o.terms_) r.add_term(m, c);
  return r;
}

Poly Poly::operator-() const {
  Poly r;
  r.bad_ = bad_;
  for (const auto& [m, c] : terms_) {
    if (c == INT64_MIN) {
      r.bad_ = true;
      break;
    }
    r.terms_.emplace(m, -c);
  }
  return r;
}

Poly Poly::operator-(const Poly& o) const { return *this + (-o); }

Poly Poly::operator*(const Poly& o) const {
  Poly r;
  r.bad_ = bad_ || o.bad_;
  if (r.bad_) return r;
  for (const auto& [m1, c1] : terms_) {
    for (const auto& [m2, c2] : o.terms_) {
      if (m1.size() + m2.size() > kMaxDegree) {
        r.bad_ = true;
        return r;
      }
      int64_t c = 0;
      if (__builtin_mul_overflow(c1, c2, &c)) {
        r.bad_ = true;
        return r;
      }
      Monomial m;
      m.reserve(m1.size() + m2.size());
      std::merge(m1.begin(), m1.end(), m2.begin(), m2.end(), std::back_inserter(m));
      r.add_term(m, c);
      if (r.bad_) return r;
    }
  }
  return r;
}

Poly Poly::exact_div(int64_t d) const {
  Poly r;
  if (bad_ || d == 0 ||
      (d == -1 && std::any_of(terms_.begin(), terms_.end(), [](const auto& t) { return t.second == INT64_MIN; }))) {
    r.bad_ = true;
    return r;
  }
  for (const auto& [m, c] : terms_) {
    if (c % d != 0) {
      r.bad_ = true;
      return r;
    }
    r.terms_.emplace(m, c / d);
  }
  return r;
}

Deps Poly::deps(const Atoms& atoms) const {
  Deps d;
  for (const auto& [m, c] : terms_)
    for (AtomId a : m) d.merge(atoms[a].deps);
  return d;
}

bool Poly::renderable(const Atoms& atoms) const {
  if (bad_) return false;
  for (const auto& [m, c] : terms_)
    for (AtomId a : m)
      if (!atoms[a].renderable) return false;
  return true;
}

std::string Poly::str(const Atoms& atoms) const {
  if (bad_) return "?";
  if (terms_.empty()) return "0";
  // Highest degree first, the constant last: "N*M + 2*N - 1".
  std::vector<std::pair<Monomial, int64_t>> ts(terms_.begin(), terms_.end());
  std::stable_sort(ts.begin(), ts.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  std::string out;
  bool first = true;
  for (const auto& [m, c] : ts) {
    int64_t mag = c;
    if (!first) {
      out += c < 0 ? " - " : " + ";
      if (c < 0) mag = c == INT64_MIN ? c : -c;
    } else if (c < 0 && !m.empty()) {
      out += "-";
      mag = c == INT64_MIN ? c : -c;
    }
    first = false;
    std::string factors;
    for (AtomId a : m) {
      if (!factors.empty()) factors += "*";
      const auto& atom = atoms[a];
      factors += atom.name.empty() ? "v" + std::to_string(a) : atom.name;
    }
    if (m.empty())
      out += std::to_string(mag);
    else if (mag == 1)
      out += factors;
    else
      out += std::to_string(mag) + "*" + factors;
  }
  return out;
}

std::string Poly::key() const {
  if (bad_) return "bad";
  std::string k;
  for (const auto& [m, c] : terms_) {
    k += std::to_string(c);
    for (AtomId a : m) k += "*" + std::to_string(a);
    k += ";";
  }
  return k;
}

}  // namespace dop::features::detail

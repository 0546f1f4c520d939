// The footprint's bounds: the range of every atom an access uses (work-item ids, groups, loop counters, quotients)
// as launch-time expressions, and the footprint of each pointer argument built from them.
#include <algorithm>

#include "analyzer.hpp"

namespace dop::features::detail {

bool KernelAnalyzer::positive_launch(const Poly& p) const {
  if (p.bad() || p.terms().size() != 1) return false;
  const auto& [m, c] = *p.terms().begin();
  if (c <= 0 || m.empty()) return false;
  for (AtomId a : m) {
    const auto& at = atoms_[a];
    if (at.kind != AtomKind::launch || !(starts_with(at.name, "global_size_") || starts_with(at.name, "local_size_") ||
                                         starts_with(at.name, "num_groups_")))
      return false;
  }
  return true;
}

bool KernelAnalyzer::launch_size_name(const std::string& n) {
  return starts_with(n, "global_size_") || starts_with(n, "local_size_") || starts_with(n, "num_groups_") ||
         starts_with(n, "global_offset_") || n == "work_dim";
}

std::string KernelAnalyzer::fp_term(int64_t c, const std::vector<std::string>& factors, bool first) {
  std::string t;
  int64_t mag = c;
  if (!first) {
    t = c < 0 ? " - " : " + ";
    if (c < 0) mag = c == INT64_MIN ? c : -c;
  }
  bool need_coef = factors.empty() || mag != 1;
  if (first && c == -1 && !factors.empty()) {
    t = "-";
    need_coef = false;
  }
  if (need_coef) t += std::to_string(mag);
  for (size_t i = 0; i < factors.size(); ++i) t += (need_coef || i > 0 ? "*" : "") + factors[i];
  return t;
}

std::optional<std::string> KernelAnalyzer::fp_bound(const Poly& p, bool upper, int depth, bool& nonneg,
                                                    std::string& why) {
  nonneg = true;
  if (p.bad()) {
    why = "value is not a polynomial";
    return std::nullopt;
  }
  std::string out;
  std::vector<std::pair<int64_t, std::vector<std::string>>> terms;
  for (const auto& [m, c] : p.terms()) {
    std::vector<std::string> factors;
    const ARange* ranged = nullptr;
    bool points_nonneg = true;
    for (AtomId a : m) {
      const ARange& r = atom_range(a, depth + 1);
      if (!r.ok) {
        why = r.why;
        return std::nullopt;
      }
      if (r.point) {
        factors.push_back(r.lo);
        points_nonneg = points_nonneg && r.nonneg;
      } else if (ranged) {
        why = "a bound needs a product of varying values";
        return std::nullopt;
      } else {
        ranged = &r;
      }
    }
    if (ranged) {
      if (!points_nonneg) {
        why = "a bound needs the sign of a kernel argument";
        return std::nullopt;
      }
      factors.push_back("(" + ((c > 0) == upper ? ranged->hi : ranged->lo) + ")");
      nonneg = nonneg && c > 0 && ranged->nonneg;
    } else {
      nonneg = nonneg && c > 0 && points_nonneg;
    }
    terms.emplace_back(c, std::move(factors));
  }
  // Constant term last.
  std::stable_sort(terms.begin(), terms.end(),
                   [](const auto& a, const auto& b) { return !a.second.empty() && b.second.empty(); });
  for (size_t i = 0; i < terms.size(); ++i) out += fp_term(terms[i].first, terms[i].second, i == 0);
  return out.empty() ? std::string("0") : out;
}

std::optional<std::string> KernelAnalyzer::fp_point(const Poly& p, int depth) {
  bool nn = false;
  std::string why;
  return fp_bound(p, true, depth, nn, why);
}

const ARange& KernelAnalyzer::atom_range(AtomId a, int depth) {
  auto it = fp_ranges_.find(a);
  if (it != fp_ranges_.end()) return it->second;
  ARange& r = fp_ranges_[a];
  r.why = "a value nested too deeply";  // also what a cycle would see
  if (depth > 24) return r;
  ARange v;
  const auto& at = atoms_[a];
  const std::string& n = at.name;
  auto dim = [&]() -> std::string {
    const auto o = n.rfind('(');
    return o == std::string::npos || o + 2 > n.size() ? std::string("0") : n.substr(o + 1, 1);
  };
  switch (at.kind) {
    case AtomKind::work_item:
      v.ok = v.nonneg = true;
      if (starts_with(n, "get_global_id(")) {
        v.lo = "gid_lo_" + dim();
        v.hi = "gid_hi_" + dim();
      } else {
        v.lo = "0";
        v.hi = "local_size_" + dim() + "-1";
      }
      break;
    case AtomKind::launch:
      if (starts_with(n, "group_id_")) {
        v.ok = v.nonneg = true;
        v.lo = "group_lo_" + n.substr(9);
        v.hi = "group_hi_" + n.substr(9);
      } else if (launch_size_name(n)) {
        v.ok = v.nonneg = v.point = true;
        v.lo = v.hi = n;
      } else {
        v.why = "address depends on '" + n + "'";
      }
      break;
    case AtomKind::param:
      if (int_params_.count(a)) {
        v.ok = v.point = true;
        v.lo = v.hi = n;
      } else {
        v.why = "address depends on '" + n + "', which is not an integer kernel argument";
      }
      break;
    case AtomKind::symbol:
      v.why = "address depends on '" + n + "', whose value the analysis does not know";
      break;
    case AtomKind::opaque:
      v.why = at.loaded ? "address depends on a loaded value"
                        : "address depends on a value the analysis does not track (merged at a branch, changed "
                          "in a loop, or not a polynomial)";
      break;
    case AtomKind::iter: {
      const LoopRec* lr = nullptr;
      for (const auto& l : loops_)
        if (l.iter == a) lr = &l;
      if (!lr) {
        v.why = "unknown loop";
        break;
      }
      const std::string line = std::to_string(lr->info.line);
      if (!lr->fp_unsafe.empty()) {
        v.why = lr->fp_unsafe;
      } else if (lr->info.trip.kind == TripCount::Kind::constant) {
        v.ok = v.nonneg = true;
        v.lo = "0";
        v.hi = std::to_string(std::max<int64_t>(lr->info.trip.value, 1) - 1);
      } else if (lr->fp_known) {
        bool nn = false;
        std::string why;
        const Poly num = lr->fp_num, den = lr->fp_den;
        const auto u = fp_bound(num, true, depth, nn, why);
        const auto d = fp_point(den, depth);
        if (!u || !d) {
          v.why = "the trip count of the loop at line " + line + " cannot be bounded (" + why + ")";
        } else {
          v.ok = v.nonneg = true;
          v.lo = "0";
          v.hi = *d == "1" ? "(" + *u + ")-1" : "(" + *u + ")/(" + *d + ")-1";
        }
      } else {
        v.why = "the loop at line " + line + " has an unknown trip count";
      }
      break;
    }
    case AtomKind::quot: {
      auto q = quots_.find(a);
      if (q == quots_.end()) {
        v.why = "address depends on a quotient";
        break;
      }
      const Poly num = q->second.first, den = q->second.second;
      bool nn_lo = false, nn_hi = false;
      std::string why;
      const auto lo = fp_bound(num, false, depth, nn_lo, why);
      const auto hi = lo ? fp_bound(num, true, depth, nn_hi, why) : std::nullopt;
      if (!lo || !hi) {
        v.why = "address depends on the quotient " + n + ", which cannot be bounded (" + why + ")";
        break;
      }
      std::optional<std::string> d;
      if (den.is_constant() && den.constant_value() > 0)
        d = std::to_string(den.constant_value());
      else if (positive_launch(den))
        d = fp_point(den, depth);
      if (d) {
        // floor or truncation (>>, & and / share the atom): both lie in [lo/d - 1, hi/d], exactly [lo/d, hi/d]
        // for a non-negative numerator.
        v.ok = true;
        v.nonneg = nn_lo;
        v.lo = "(" + *lo + ")/(" + *d + ")" + (nn_lo ? "" : "-1");
        v.hi = "(" + *hi + ")/(" + *d + ")";
      } else if (nn_lo) {
        v.ok = true;  // |a / b| <= a for a >= 0 and any non-zero b
        v.lo = "-(" + *hi + ")";
        v.hi = "(" + *hi + ")";
      } else {
        v.why = "address depends on the quotient " + n + " by a value of unknown sign";
      }
      break;
    }
  }
  r = std::move(v);
  return r;
}

void KernelAnalyzer::footprint() {
  Footprint& fp = out_.footprint;
  std::map<std::string, AtomId> names;
  std::map<AtomId, std::string> named;
  auto name_of = [&](AtomId a) {
    auto it = named.find(a);
    if (it != named.end()) return it->second;
    std::string n = atoms_[a].name.empty() ? "v" + std::to_string(a) : atoms_[a].name;
    if (names.count(n)) n += "#" + std::to_string(a);
    names[n] = a;
    named[a] = n;
    return n;
  };
  for (size_t i = 0; i < out_.args.size() && i < objects_.size(); ++i) {
    if (!fp_arg(int(i))) continue;
    ArgFootprint af;
    af.name = out_.args[i].name;
    if (!out_.complete || stopped_) {
      af.whole = true;
      af.why = loc_str({}) + ": the analysis of the kernel is incomplete";
    } else if (!fp_poison_.empty()) {
      af.whole = true;
      af.why = fp_poison_;
    } else if (!fp_whole_[i].empty()) {
      af.whole = true;
      af.why = fp_whole_[i];
    } else {
      for (const FpAccess& x : fp_acc_[i]) {
        FootprintAccess fa;
        fa.write = x.write;
        fa.bytes = x.size;
        fa.may = x.may;
        for (const FpGuard& g : x.guards) {
          const auto bound = fp_point(g.bound, 0);
          if (!bound || !atom_range(g.atom, 0).ok) {  // a guard that cannot be written: the access is not certain
            fa.may = true;
            fa.guards.clear();
            break;
          }
          fa.guards.push_back({name_of(g.atom), g.upper ? "<=" : ">=", *bound});
        }
        for (const auto& [m, c] : x.addr.terms()) {
          FootprintTerm t;
          t.coef = c;
          for (AtomId a : m) {
            const ARange& r = atom_range(a, 0);
            if (!r.ok) {
              af.whole = true;
              af.why = loc_str(x.loc) + ": " + r.why;
              break;
            }
            t.atoms.push_back(name_of(a));
          }
          if (af.whole) break;
          fa.terms.push_back(std::move(t));
        }
        if (af.whole) break;
        // constant term last
        std::stable_sort(fa.terms.begin(), fa.terms.end(), [](const FootprintTerm& p, const FootprintTerm& q) {
          return !p.atoms.empty() && q.atoms.empty();
        });
        af.accesses.push_back(std::move(fa));
      }
      if (af.whole) af.accesses.clear();
    }
    if (!af.whole)
      for (const auto& acc : af.accesses) {
        auto add_range = [&](const std::string& an) {
          const ARange& r = atom_range(names.at(an), 0);
          fp.ranges[an] = {r.lo, r.hi};
        };
        for (const auto& t : acc.terms)
          for (const auto& an : t.atoms) add_range(an);
        for (const auto& g : acc.guards) add_range(g.atom);
      }
    fp.args.push_back(std::move(af));
  }
}

}  // namespace dop::features::detail

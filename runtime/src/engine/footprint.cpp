// Memory footprints: which bytes of each buffer a range of work-items can touch, from the analysis' symbolic
// addresses (docs/features.md, "Memory footprint"), by interval arithmetic: parse_footprint reads them from a
// kernel's features JSON, FootprintEvaluator evaluates them for a launch's chunks (on the copy-mode launch path).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "dop/expr.hpp"
#include "dop/footprint.hpp"

namespace dop {

namespace {

using json = nlohmann::json;
using i128 = __int128;

const json* find_footprint(const json& j) {
  if (!j.is_object()) return nullptr;
  if (j.contains("footprint")) return &j["footprint"];
  if (j.contains("features") && j["features"].is_object() && j["features"].contains("footprint"))
    return &j["features"]["footprint"];
  if (j.contains("kernels") && j["kernels"].is_array() && j["kernels"].size() == 1)
    return find_footprint(j["kernels"][0]);
  return nullptr;
}

struct Interval {
  i128 lo, hi;
};
constexpr i128 kLimit = i128(1) << 62;  // beyond this a range is useless (and products could overflow)

Interval mul(const Interval& a, const Interval& b) {
  const i128 c[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}
bool sane(const Interval& a) { return a.lo > -kLimit && a.hi < kLimit; }

// An atom's range; an atom whose range cannot be evaluated (a float argument, a name this launch lacks) leaves the
// arguments that use it unbounded. An empty range (a loop that does not run) becomes its low end: a safe stand-in.
// `empty`, when given, says whether the range was empty.
std::optional<Interval> evaluate(const std::string& lo, const std::string& hi,
                                 const std::map<std::string, int64_t>& env, char* empty = nullptr) {
  try {
    Interval r{expr::evaluate(lo, env), expr::evaluate(hi, env)};
    if (empty) *empty = r.hi < r.lo;
    if (r.hi < r.lo) r.hi = r.lo;
    return r;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The names range expressions may use: integer scalar arguments, the launch, and the work-items' ids: every id of
// the launch, or in each dimension d those up to gid_hi[d] when given.
std::map<std::string, int64_t> launch_env(const Spec& spec, const std::vector<ArgData>& args,
                                          const std::vector<size_t>& local, const std::vector<size_t>& gid_hi) {
  std::map<std::string, int64_t> env = integer_scalars(spec, args);
  const size_t dims = spec.global.size();
  for (size_t d = 0; d < 3; ++d) {
    const std::string s = std::to_string(d);
    const int64_t g = d < dims ? int64_t(spec.global[d]) : 1;
    const int64_t l = d < dims && d < local.size() ? int64_t(local[d]) : 1;
    const int64_t hi = d < gid_hi.size() ? std::min<int64_t>(int64_t(gid_hi[d]), g - 1) : g - 1;
    env["global_size_" + s] = g;
    env["local_size_" + s] = l;
    env["num_groups_" + s] = (g + l - 1) / l;
    env["global_offset_" + s] = 0;
    env["gid_lo_" + s] = 0;
    env["gid_hi_" + s] = hi;
    env["group_lo_" + s] = 0;
    env["group_hi_" + s] = hi / l;
  }
  env["work_dim"] = int64_t(dims);
  return env;
}

// The bytes one access can reach with the atoms' ranges `atom`, unclamped; std::nullopt when an atom it needs has
// no range, or a value leaves the sane range.
std::optional<Interval> access_reach(const Footprint::Access& ac, const std::vector<std::optional<Interval>>& atom) {
  Interval sum{0, 0};
  for (const auto& t : ac.terms) {
    Interval v{t.coef, t.coef};
    for (size_t k : t.atoms) {
      if (!atom[k]) return std::nullopt;
      v = mul(v, *atom[k]);
      if (!sane(v)) return std::nullopt;
    }
    sum = {sum.lo + v.lo, sum.hi + v.hi};
    if (!sane(sum)) return std::nullopt;
  }
  sum.hi += ac.bytes;  // [lo, hi): the last access ends bytes later
  return sum;
}

void widen(std::optional<Interval>& acc, const Interval& r) {
  acc = acc ? Interval{std::min(acc->lo, r.lo), std::max(acc->hi, r.hi)} : r;
}

// The bytes one argument's accesses can reach with the atoms' ranges `atom`, unclamped: reads and writes
// (std::nullopt: no such access). False when an atom it needs has no range, or a value leaves the sane range.
bool reach(const Footprint::Arg& arg, const std::vector<std::optional<Interval>>& atom, std::optional<Interval>& rd,
           std::optional<Interval>& wr) {
  for (const auto& ac : arg.accesses) {
    const auto r = access_reach(ac, atom);
    if (!r) return false;
    widen(ac.write ? wr : rd, *r);
  }
  return true;
}

// The reach of an access that a work-item certainly makes at its top (footprint_extents' `certain`), with the
// atoms' ranges `atom` and the names they were evaluated with, `env`. std::nullopt when it is `may`, an atom's range
// is empty (`empty`: its loop does not run), or a term that is not constant does not grow with its atoms (a negative
// coefficient or atom), so that the interval's top would not be where every atom is at its highest. Its guards (on
// get_global_id(d)) cut the ids of dimension d, and the atoms are evaluated again with the ids so cut; std::nullopt
// when a guard cannot be evaluated or leaves no work-item, or the access also uses that dimension's local or group
// id (whose ranges the guard does not cut).
std::optional<Interval> certain_reach(const Footprint& fp, const Footprint::Access& ac,
                                      const std::vector<std::optional<Interval>>& atom, const std::vector<char>& empty,
                                      const std::map<std::string, int64_t>& env) {
  if (ac.may) return std::nullopt;
  std::vector<std::optional<Interval>> cut;
  if (!ac.guards.empty()) {
    auto at = env;
    std::set<std::string> dims;
    for (const auto& g : ac.guards) {
      const std::string& name = fp.atoms[g.atom];
      const std::string pre = "get_global_id(";
      if (name.size() != pre.size() + 2 || name.compare(0, pre.size(), pre) != 0) return std::nullopt;
      const std::string d = name.substr(pre.size(), 1);
      const auto b = evaluate(g.bound, g.bound, env);
      if (!b) return std::nullopt;
      auto& lo = at["gid_lo_" + d];
      auto& hi = at["gid_hi_" + d];
      if (g.upper)
        hi = std::min<int64_t>(hi, int64_t(b->hi));
      else
        lo = std::max<int64_t>(lo, int64_t(b->lo));
      if (hi < lo) return std::nullopt;
      at["group_lo_" + d] = lo / at["local_size_" + d];
      at["group_hi_" + d] = hi / at["local_size_" + d];
      dims.insert(d);
    }
    cut.resize(atom.size());
    for (const auto& t : ac.terms)
      for (size_t k : t.atoms) {
        for (const auto& d : dims)
          if (fp.atoms[k].find("get_local_id(" + d + ")") != std::string::npos ||
              fp.atoms[k].find("group_id_" + d) != std::string::npos)
            return std::nullopt;
        cut[k] = evaluate(fp.ranges[k].first, fp.ranges[k].second, at);
      }
  }
  const auto& r = ac.guards.empty() ? atom : cut;
  for (const auto& t : ac.terms) {
    bool constant = true, grows = t.coef > 0;
    for (size_t k : t.atoms) {
      if (empty[k] || !r[k]) return std::nullopt;
      constant = constant && r[k]->lo == r[k]->hi;
      grows = grows && r[k]->lo >= 0;
    }
    if (!constant && !grows) return std::nullopt;
  }
  return access_reach(ac, r);
}

}  // namespace

Footprint parse_footprint(const std::string& features_json, const std::string& origin) {
  json j;
  try {
    j = json::parse(features_json);
  } catch (const json::parse_error& e) {
    throw std::runtime_error(origin + ": features are not valid JSON (byte " + std::to_string(e.byte) + ")");
  }
  Footprint fp;
  const json* f = find_footprint(j);
  if (!f || f->is_null()) return fp;
  auto bad = [&](const std::string& what) { return std::runtime_error(origin + ": footprint: " + what); };
  if (!f->is_object() || !f->contains("args") || !(*f)["args"].is_object())
    throw bad("expected an object with \"args\" and \"ranges\"");
  const json& ranges = f->value("ranges", json::object());
  if (!ranges.is_object()) throw bad("\"ranges\" is not an object");
  std::map<std::string, size_t> index;
  auto atom = [&](const json& name, const std::string& where) -> size_t {
    if (!name.is_string()) throw bad(where + ": an atom is not a name");
    const std::string n = name.get<std::string>();
    auto it = index.find(n);
    if (it != index.end()) return it->second;
    const auto r = ranges.find(n);
    if (r == ranges.end()) throw bad(where + ": atom '" + n + "' has no range");
    if (!r->is_array() || r->size() != 2 || !(*r)[0].is_string() || !(*r)[1].is_string())
      throw bad("range of '" + n + "' is not [lo, hi] expressions");
    fp.atoms.push_back(n);
    fp.ranges.emplace_back((*r)[0].get<std::string>(), (*r)[1].get<std::string>());
    index[n] = fp.atoms.size() - 1;
    return fp.atoms.size() - 1;
  };
  for (const auto& [name, a] : (*f)["args"].items()) {
    const std::string where = "argument '" + name + "'";
    if (!a.is_object()) throw bad(where + " is not an object");
    Footprint::Arg arg;
    arg.whole = a.value("whole", true);
    arg.why = a.value("why", "");
    if (!arg.whole) {
      const json& acc = a.value("accesses", json::array());
      if (!acc.is_array()) throw bad(where + ": \"accesses\" is not an array");
      for (const auto& x : acc) {
        if (!x.is_object() || !x.contains("terms") || !x["terms"].is_array() || !x.contains("bytes") ||
            !x["bytes"].is_number_integer())
          throw bad(where + ": an access needs \"bytes\" and \"terms\"");
        Footprint::Access ac;
        ac.write = x.value("write", false);
        ac.bytes = x["bytes"].get<int64_t>();
        ac.may = x.value("may", false);
        const json& guards = x.value("guards", json::array());
        if (!guards.is_array()) throw bad(where + ": \"guards\" is not an array");
        for (const auto& g : guards) {
          if (!g.is_array() || g.size() != 3 || !(g[1] == "<=" || g[1] == ">=") || !g[2].is_string())
            throw bad(where + ": a guard is not [atom, \"<=\" or \">=\", bound]");
          ac.guards.push_back({atom(g[0], where), g[1] == "<=", g[2].get<std::string>()});
        }
        if (ac.bytes <= 0) throw bad(where + ": an access of " + std::to_string(ac.bytes) + " bytes");
        for (const auto& t : x["terms"]) {
          if (!t.is_array() || t.empty() || !t[0].is_number_integer())
            throw bad(where + ": a term is not [coefficient, atom...]");
          Footprint::Term term;
          term.coef = t[0].get<int64_t>();
          for (size_t k = 1; k < t.size(); ++k) term.atoms.push_back(atom(t[k], where));
          ac.terms.push_back(std::move(term));
        }
        arg.accesses.push_back(std::move(ac));
      }
    }
    fp.args[name] = std::move(arg);
  }
  return fp;
}

struct FootprintEvaluator::Atom {
  enum class Kind { fixed, chunk, expr } kind = Kind::fixed;
  std::optional<Interval> fixed;   // Kind::fixed: evaluated once; nullopt when it cannot be
  int lo_slot = -1, hi_slot = -1;  // Kind::chunk: which chunk value each end is (gid_lo, gid_hi, group_lo, group_hi)
};

FootprintEvaluator::FootprintEvaluator(const Footprint& fp, const Spec& spec, const std::vector<ArgData>& args,
                                       const std::vector<size_t>& local)
    : fp_(fp), spec_(spec), env_(launch_env(spec, args, local, {})) {
  const size_t dims = spec.global.size();
  split_ = dims - 1;
  split_local_ = split_ < local.size() ? int64_t(local[split_]) : 1;
  const std::string sd = std::to_string(split_);
  const std::string chunk_names[4] = {"gid_lo_" + sd, "gid_hi_" + sd, "group_lo_" + sd, "group_hi_" + sd};
  auto slot = [&](const std::string& e) {
    for (int k = 0; k < 4; ++k)
      if (e == chunk_names[k]) return k;
    return -1;
  };
  auto mentions_chunk = [&](const std::string& e) {
    for (const auto& n : chunk_names)
      if (e.find(n) != std::string::npos) return true;
    return false;
  };
  atoms_.resize(fp.atoms.size());
  for (size_t k = 0; k < fp.atoms.size(); ++k) {
    const auto& [lo, hi] = fp.ranges[k];
    Atom& a = atoms_[k];
    if (!mentions_chunk(lo) && !mentions_chunk(hi)) {
      a.fixed = evaluate(lo, hi, env_);
    } else if (slot(lo) >= 0 && (slot(hi) >= 0 || !mentions_chunk(hi))) {
      a.kind = Atom::Kind::chunk;  // the usual get_global_id / get_group_id of the split dimension: no parsing
      a.lo_slot = slot(lo);
      a.hi_slot = slot(hi);
      if (a.hi_slot < 0) a.fixed = evaluate(hi, hi, env_);
    } else {
      a.kind = Atom::Kind::expr;
      has_expr_ = true;
    }
  }
}

FootprintEvaluator::~FootprintEvaluator() = default;

std::vector<ArgRanges> FootprintEvaluator::operator()(size_t gid_begin, size_t gid_end) const {
  std::vector<ArgRanges> out(spec_.args.size());
  if (fp_.empty() || gid_end <= gid_begin) return out;
  const int64_t chunk[4] = {int64_t(gid_begin), int64_t(gid_end) - 1, int64_t(gid_begin) / split_local_,
                            (int64_t(gid_end) - 1) / split_local_};
  std::map<std::string, int64_t> env;  // only for range expressions more complex than a chunk name
  if (has_expr_) {
    env = env_;
    const std::string sd = std::to_string(split_);
    env["gid_lo_" + sd] = chunk[0];
    env["gid_hi_" + sd] = chunk[1];
    env["group_lo_" + sd] = chunk[2];
    env["group_hi_" + sd] = chunk[3];
  }
  std::vector<std::optional<Interval>> atom(atoms_.size());
  for (size_t k = 0; k < atoms_.size(); ++k) {
    const Atom& a = atoms_[k];
    if (a.kind == Atom::Kind::fixed) {
      atom[k] = a.fixed;
    } else if (a.kind == Atom::Kind::chunk) {
      if (a.hi_slot < 0 && !a.fixed) continue;
      Interval r{chunk[a.lo_slot], a.hi_slot >= 0 ? chunk[a.hi_slot] : a.fixed->hi};
      if (r.hi < r.lo) r.hi = r.lo;
      atom[k] = r;
    } else {
      atom[k] = evaluate(fp_.ranges[k].first, fp_.ranges[k].second, env);
    }
  }
  for (size_t i = 0; i < spec_.args.size(); ++i) {
    const ArgSpec& a = spec_.args[i];
    if (a.kind != ArgKind::buffer) continue;
    const auto it = fp_.args.find(a.name);
    if (it == fp_.args.end() || it->second.whole) continue;
    std::optional<Interval> rd, wr;
    if (!reach(it->second, atom, rd, wr)) continue;
    const i128 size = i128(a.bytes());
    auto clamp = [&](const std::optional<Interval>& r) {
      if (!r) return ByteRange{0, 0};  // no such access
      return ByteRange{int64_t(std::clamp<i128>(r->lo, 0, size)), int64_t(std::clamp<i128>(r->hi, 0, size))};
    };
    out[i].read = clamp(rd);
    out[i].write = clamp(wr);
  }
  return out;
}

std::vector<ArgRanges> footprint_ranges(const Footprint& fp, const Spec& spec, const std::vector<ArgData>& args,
                                        const std::vector<size_t>& local, size_t gid_begin, size_t gid_end) {
  return FootprintEvaluator(fp, spec, args, local)(gid_begin, gid_end);
}

std::vector<std::optional<ByteRange>> footprint_extents(const Footprint& fp, const Spec& spec,
                                                        const std::vector<ArgData>& args,
                                                        const std::vector<size_t>& local,
                                                        const std::vector<size_t>& gid_hi, bool certain) {
  std::vector<std::optional<ByteRange>> out(spec.args.size());
  if (fp.empty()) return out;
  const auto env = launch_env(spec, args, local, gid_hi);
  std::vector<std::optional<Interval>> atom(fp.atoms.size());
  std::vector<char> empty(fp.atoms.size());
  for (size_t k = 0; k < fp.atoms.size(); ++k)
    atom[k] = evaluate(fp.ranges[k].first, fp.ranges[k].second, env, &empty[k]);
  for (size_t i = 0; i < spec.args.size(); ++i) {
    if (spec.args[i].kind == ArgKind::scalar) continue;
    const auto it = fp.args.find(spec.args[i].name);
    if (it == fp.args.end() || it->second.whole) continue;
    std::optional<Interval> rd, wr;
    if (certain) {
      for (const auto& ac : it->second.accesses)
        if (const auto r = certain_reach(fp, ac, atom, empty, env)) widen(ac.write ? wr : rd, *r);
    } else if (!reach(it->second, atom, rd, wr)) {
      continue;
    }
    if (!rd && !wr) {
      out[i] = ByteRange{0, 0};  // never accessed
      continue;
    }
    const Interval u = rd && wr ? Interval{std::min(rd->lo, wr->lo), std::max(rd->hi, wr->hi)} : rd ? *rd : *wr;
    out[i] = ByteRange{int64_t(u.lo), int64_t(u.hi)};
  }
  return out;
}

}  // namespace dop

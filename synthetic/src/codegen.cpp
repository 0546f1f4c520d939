// OpenCL C code generation: one kernel per (pattern with γ, dim, dtype, extensions), sizes passed as scalars.
// The shape follows Dopia Figs. 5 and 6: the outer dim dimensions come from work-item ids and are guarded, the
// inner dimensions are loops; the output is written continuously.
#include <sstream>
#include <string>
#include <vector>

#include "dop/synthetic.hpp"
#include "internal.hpp"

namespace dop::synthetic {

namespace {

using detail::Term;
using detail::TermAccess;
using detail::Writer;

std::string var(int k) { return "i" + std::to_string(k); }
std::string ext(int k) { return "N" + std::to_string(k); }

// Row-major linear index of coordinates v[0..β-1] in the extents N0..N{β-1}: ((v0 * N1 + v1) * N2 + v2).
std::string linear(const std::vector<std::string>& v) {
  std::string s = v[0];
  for (size_t k = 1; k < v.size(); ++k) s = "(" + s + " * " + ext(int(k)) + " + " + v[k] + ")";
  return s;
}

// Linear index of the transposed element: the coordinates reversed, in the reversed extents:
// ((v2 * N1 + v1) * N0 + v0). Along the innermost loop (v[β-1]) the stride is N0*...*N{β-2}.
std::string transposed(const std::vector<std::string>& v) {
  const int last = int(v.size()) - 1;
  std::string s = v[size_t(last)];
  for (int k = last - 1; k >= 0; --k) s = "(" + s + " * " + ext(k) + " + " + v[size_t(k)] + ")";
  return s;
}

// The sum of the terms for the element at coordinates v, with γ operations on every term.
std::string sum_expr(const Params& p, const std::vector<std::string>& v) {
  const std::string idx = linear(v);
  std::string sum;
  for (const Term& t : detail::term_list(p)) {
    const std::string m = detail::matrix_name(t.matrix);
    std::string e;
    switch (t.access) {
      case TermAccess::continuous:
        e = m + "[" + idx + "]";
        break;
      case TermAccess::transposed:
        e = m + "[" + transposed(v) + "]";
        break;
      case TermAccess::random:
        e = m + "[Idx[" + idx + "]]";
        break;
      case TermAccess::constant:
        e = m + "[K]";
        break;
    }
    for (int j = 1; j <= p.gamma; ++j) e = "(" + e + (j % 2 ? " * c" : " + c") + std::to_string(j) + ")";
    sum += (sum.empty() ? "" : " + ") + e;
  }
  return sum;
}

// Emits the statement(s) that compute the element at v and store it to `target`.
void emit_element(Writer& w, const Params& p, const char* type, const std::vector<std::string>& v,
                  const std::string& target) {
  if (!p.divergent) {
    w.line(target + " = " + sum_expr(p, v) + ";");
    return;
  }
  w.line(std::string(type) + " s = " + sum_expr(p, v) + ";");
  w.open("if (i0 & 1)");  // odd outer rows: neighbouring work-items diverge
  w.line("for (int r = 0; r < " + std::to_string(detail::kDivRounds) + "; r++) s = s * b1 + b2;");
  w.close();
  w.line(target + " = s;");
}

std::string guard(int dim) {
  std::string g;
  for (int k = 0; k < dim; ++k) g += (k ? " && " : "") + var(k) + " < " + ext(k);
  return g;
}

}  // namespace

std::string program_name(const Params& p) {
  validate(p);
  if (p.span()) return detail::span_program_name(p);
  std::string s = "syn_" + pattern(p) + "_d" + std::to_string(p.dim) + "_" + dtype_name(p.dtype);
  if (p.coarsen != 1) s += "_w" + std::to_string(p.coarsen);
  if (p.divergent) s += "_div";
  if (p.local_mem) s += "_lm";
  return s;
}

std::string kernel_source(const Params& p) {
  if (p.span()) {
    validate(p);
    return detail::span_kernel_source(p);
  }
  const std::string kname = program_name(p);
  const char* T = dtype_name(p.dtype);
  const auto terms = detail::term_list(p);
  Writer w;
  auto& o = w.out;
  o << "// dop synthetic workload " << kname << " (Dopia PPoPP'22, Table 2): " << p.terms() << " term(s) of " << p.alpha
    << " " << p.beta << "-d " << T << " matrices, " << p.gamma << " operation(s) per term";
  o << ", work-item dim " << p.dim << ".\n// Out[i] =";
  for (size_t k = 0; k < terms.size(); ++k) {
    const char* how = terms[k].access == TermAccess::continuous   ? "[i]"
                      : terms[k].access == TermAccess::transposed ? "^T[i]"
                      : terms[k].access == TermAccess::random     ? "[Idx[i]]"
                                                                  : "[K]";
    o << (k ? " + " : " ") << "f(" << detail::matrix_name(terms[k].matrix) << how << ")";
  }
  o << ", f(x) = x";
  for (int j = 1; j <= p.gamma; ++j) o << (j % 2 ? " * c" : " + c") << j;
  o << (p.gamma ? " (left to right)" : "") << ".\n";
  if (p.coarsen != 1) o << "// _w" << p.coarsen << ": every work-item processes " << p.coarsen << " outer rows.\n";
  if (p.divergent) o << "// _div: odd outer rows apply s = s*b1 + b2 " << detail::kDivRounds << " more times.\n";
  if (p.local_mem) o << "// _lm: results are staged in local memory and written per work-group after a barrier.\n";
  if (p.dtype == DType::f64) o << "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";

  // Signature: inputs, output, index array, extents, constant address, γ constants, _div constants, local tile.
  o << "__kernel void " << kname << "(";
  std::vector<std::string> params;
  for (int k = 0; k < p.alpha; ++k)
    params.push_back("__global const " + std::string(T) + "* " + detail::matrix_name(k));
  params.push_back("__global " + std::string(T) + "* Out");
  if (p.epsilon) params.push_back("__global const int* Idx");
  for (int k = 0; k < p.beta; ++k) params.push_back("int " + ext(k));
  if (p.theta) params.push_back("int K");
  for (int j = 1; j <= p.gamma; ++j) params.push_back(std::string(T) + " c" + std::to_string(j));
  if (p.divergent) {
    params.push_back(std::string(T) + " b1");
    params.push_back(std::string(T) + " b2");
  }
  if (p.local_mem) params.push_back("__local " + std::string(T) + "* tile");
  for (size_t k = 0; k < params.size(); ++k) o << (k ? ",\n    " : "") << params[k];
  o << ") {\n";

  std::vector<std::string> v;
  for (int k = 0; k < p.beta; ++k) v.push_back(var(k));

  if (!p.local_mem) {
    if (p.coarsen != 1) w.open("for (int k = 0; k < " + std::to_string(p.coarsen) + "; k++)");
    for (int k = 0; k < p.dim; ++k) {
      std::string id = "(int)get_global_id(" + std::to_string(k) + ")";
      if (k == 0 && p.coarsen != 1) id = id + " * " + std::to_string(p.coarsen) + " + k";
      w.line("const int " + var(k) + " = " + id + ";");
    }
    w.open("if (" + guard(p.dim) + ")");
    for (int k = p.dim; k < p.beta; ++k)
      w.open("for (int " + var(k) + " = 0; " + var(k) + " < " + ext(k) + "; " + var(k) + "++)");
    emit_element(w, p, T, v, "Out[" + linear(v) + "]");
    for (int k = p.dim; k < p.beta; ++k) w.close();
    w.close();
    if (p.coarsen != 1) w.close();
  } else {
    // Every work-item reaches every barrier: the loops are outside the guard, which covers only the computation.
    const int tw = detail::tile_width(p);
    const std::string TW = std::to_string(tw);
    std::string lin = "get_local_id(" + std::to_string(p.dim - 1) + ")";
    for (int k = p.dim - 2; k >= 0; --k)
      lin = "get_local_id(" + std::to_string(k) + ") + get_local_size(" + std::to_string(k) + ") * (" + lin + ")";
    std::string wgs = "get_local_size(0)";
    for (int k = 1; k < p.dim; ++k) wgs += " * get_local_size(" + std::to_string(k) + ")";
    w.line("const int l = (int)(" + lin + ");");
    w.line("const int wgs = (int)(" + wgs + ");");
    for (int k = 0; k < p.dim; ++k) w.line("const int " + var(k) + " = (int)get_global_id(" + std::to_string(k) + ");");
    w.line("const int active = " + guard(p.dim) + ";");
    const int last = p.beta - 1;
    for (int k = p.dim; k < last; ++k)
      w.open("for (int " + var(k) + " = 0; " + var(k) + " < " + ext(k) + "; " + var(k) + "++)");
    w.open("for (int x0 = 0; x0 < " + ext(last) + "; x0 += " + TW + ")");
    w.open("if (active)");
    w.open("for (int b = 0; b < " + TW + "; b++)");
    w.line("const int " + var(last) + " = x0 + b;");
    emit_element(w, p, T, v, "tile[l * " + TW + " + b]");
    w.close();
    w.close();
    w.line("barrier(CLK_LOCAL_MEM_FENCE);");
    // Cooperative write: the tile holds TW consecutive elements of each of the group's rows; element e belongs to
    // row r = e / TW, whose outer coordinates follow from r as from a local linear id.
    w.open("for (int e = l; e < wgs * " + TW + "; e += wgs)");
    w.line("const int r = e / " + TW + ";");
    std::vector<std::string> ov = v;
    std::string rest = "r";
    for (int k = 0; k < p.dim; ++k) {
      const std::string ks = std::to_string(k);
      const std::string base = "(int)(get_group_id(" + ks + ") * get_local_size(" + ks + "))";
      const std::string within = k == p.dim - 1 ? rest : rest + " % (int)get_local_size(" + ks + ")";
      w.line("const int o" + ks + " = " + base + " + " + within + ";");
      rest = "(" + rest + " / (int)get_local_size(" + ks + "))";
      ov[size_t(k)] = "o" + ks;
    }
    ov[size_t(last)] = "x0 + e % " + TW;
    std::string og;
    for (int k = 0; k < p.dim; ++k) og += (k ? " && o" : "o") + std::to_string(k) + " < " + ext(k);
    w.line("if (" + og + ") Out[" + linear(ov) + "] = tile[e];");
    w.close();
    w.line("barrier(CLK_LOCAL_MEM_FENCE);");
    w.close();
    for (int k = p.dim; k < last; ++k) w.close();
  }
  o << "}\n";
  return o.str();
}

}  // namespace dop::synthetic

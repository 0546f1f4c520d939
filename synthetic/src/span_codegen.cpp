// OpenCL C code of the span families: one kernel per (family, radius, γ); sizes are scalar arguments. Every term of
// a reduction passes through γ dependent FMAs, t = t*c1 + c2, with c1, c2 kernel arguments (not literals) so that
// the compiler can neither fold nor reassociate them. Subscripts are written inline so that a static analysis sees
// each access pattern in its subscript.
#include <string>

#include "dop/synthetic.hpp"
#include "internal.hpp"

namespace dop::synthetic::detail {

namespace {

// t = t*c1 + c2, γ times (nothing for γ = 0).
void chain(Writer& w, int gamma) {
  if (gamma > 0) w.line("for (int r = 0; r < " + std::to_string(gamma) + "; r++) t = t * c1 + c2;");
}

// One term of a reduction: t = <expr>, the chain, acc += t.
void term(Writer& w, const std::string& expr, int gamma) {
  w.line("t = " + expr + ";");
  chain(w, gamma);
  w.line("acc += t;");
}

// A reduction into `acc` of one term per iteration of `loop`, stored by `store`.
void reduction(Writer& w, const std::string& loop, const std::string& expr, int gamma, const std::string& store) {
  w.line("float acc = 0.0f;");
  w.line("float t;");
  w.open(loop);
  term(w, expr, gamma);
  w.close();
  w.line(store);
}

const char* summary(const Params& p) {
  switch (p.family) {
    case Family::triad:
      return "tri: Out[i] = f(A[i] + s*B[i]); streaming, a work-item per element";
    case Family::matmul:
      return "mm: C[i][j] = sum_k f(A[i][k]*B[k][j]) (M x K times K x N); a work-item per element of C, dimension 0 "
             "along a row of C (B read down a column: coalesced across work-items)";
    case Family::matmul_bt:
      return "mmt: C[i][j] = sum_k f(A[i][k]*B[j][k]) (B stored N x K, transposed); a work-item per element of C, "
             "both operands read along a row per work-item";
    case Family::matvec_rows:
      return "mvr: y[i] = sum_j f(A[i][j]*x[j]) (A M x N); a work-item per row: a contiguous row per work-item, "
             "strided across neighbouring work-items";
    case Family::matvec_cols:
      return "mvc: y[j] = sum_i f(A[i][j]*x[i]) (A M x N); a work-item per column: neighbouring work-items read "
             "neighbouring elements, a strided column per work-item";
    case Family::gather:
      return "gv: y[i] = sum_k f(A[i*K + k] * x[C[i*K + k]]) (K entries per row at random columns C); a work-item per "
             "row: A and C contiguous per work-item, x read at random";
    default:
      return "st<r>: Out[i][j] = sum over the star of radius r of f(w_d * In[..]), w_0 = 0.5, w_d = 0.5/2^d; a "
             "work-item per point, the border (r wide) not written";
  }
}

}  // namespace

std::string span_kernel_source(const Params& p) {
  const std::string kname = span_program_name(p);
  const int g = p.gamma;
  Writer w;
  auto& o = w.out;
  o << "// dop span workload " << kname << " (docs/synthetic.md, \"The span set\"), float.\n// " << summary(p)
    << ".\n// f(t) = t*c1 + c2 applied " << g << " time(s) (dependent FMAs).\n";
  const std::string chain_args = g > 0 ? ", float c1, float c2" : "";
  switch (p.family) {
    case Family::triad:
      o << "__kernel void " << kname << "(__global const float* A, __global const float* B, __global float* Out, "
        << "int N, float s" << chain_args << ") {\n";
      w.line("const int i = (int)get_global_id(0);");
      w.open("if (i < N)");
      w.line("float t = A[i] + s * B[i];");
      chain(w, g);
      w.line("Out[i] = t;");
      w.close();
      break;
    case Family::matmul:
    case Family::matmul_bt: {
      const bool bt = p.family == Family::matmul_bt;
      o << "__kernel void " << kname << "(__global const float* A, __global const float* B, __global float* C, "
        << "int M, int N, int K" << chain_args << ") {\n";
      w.line("const int j = (int)get_global_id(0);");
      w.line("const int i = (int)get_global_id(1);");
      w.open("if (i < M && j < N)");
      reduction(w, "for (int k = 0; k < K; k++)",
                std::string("A[i * K + k] * ") + (bt ? "B[j * K + k]" : "B[k * N + j]"), g, "C[i * N + j] = acc;");
      w.close();
      break;
    }
    case Family::matvec_rows:
    case Family::matvec_cols: {
      const bool rows = p.family == Family::matvec_rows;
      o << "__kernel void " << kname << "(__global const float* A, __global const float* x, __global float* y, "
        << "int M, int N" << chain_args << ") {\n";
      w.line(std::string("const int ") + (rows ? "i" : "j") + " = (int)get_global_id(0);");
      w.open(rows ? "if (i < M)" : "if (j < N)");
      reduction(w, rows ? "for (int j = 0; j < N; j++)" : "for (int i = 0; i < M; i++)",
                rows ? "A[i * N + j] * x[j]" : "A[i * N + j] * x[i]", g, rows ? "y[i] = acc;" : "y[j] = acc;");
      w.close();
      break;
    }
    case Family::gather:
      o << "__kernel void " << kname << "(__global const float* A, __global const int* C, __global const float* x, "
        << "__global float* y, int N, int K" << chain_args << ") {\n";
      w.line("const int i = (int)get_global_id(0);");
      w.open("if (i < N)");
      reduction(w, "for (int k = 0; k < K; k++)", "A[i * K + k] * x[C[i * K + k]]", g, "y[i] = acc;");
      w.close();
      break;
    default: {  // stencil
      const std::string R = std::to_string(p.radius);
      o << "__kernel void " << kname << "(__global const float* In, __global float* Out, int M, int N" << chain_args
        << ") {\n";
      w.line("const int j = (int)get_global_id(0);");
      w.line("const int i = (int)get_global_id(1);");
      w.open("if (i >= " + R + " && i < M - " + R + " && j >= " + R + " && j < N - " + R + ")");
      w.line("float t = 0.5f * In[i * N + j];");
      chain(w, g);
      w.line("float acc = t;");
      w.line("float w = 0.25f;");
      w.open("for (int d = 1; d <= " + R + "; d++)");
      term(w, "w * In[(i - d) * N + j]", g);
      term(w, "w * In[(i + d) * N + j]", g);
      term(w, "w * In[i * N + (j - d)]", g);
      term(w, "w * In[i * N + (j + d)]", g);
      w.line("w *= 0.5f;");
      w.close();
      w.line("Out[i * N + j] = acc;");
      w.close();
      break;
    }
  }
  o << "}\n";
  return o.str();
}

}  // namespace dop::synthetic::detail

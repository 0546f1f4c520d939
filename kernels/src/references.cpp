// CPU references of the real-world kernels. Each mirrors its kernel's arithmetic: float accumulators, the same
// summation order per output element (loops may be nested differently for cache-friendliness, never reordering the
// terms of one element), so that only FMA contraction and the device's division separate the two results.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dop/kernels.hpp"
#include "dop/spec.hpp"

namespace dop::kernels {
namespace {

/// Typed, checked access to a spec's arguments by name.
class Args {
 public:
  Args(const char* kernel, const Spec& spec, std::vector<ArgData>& data) : kernel_(kernel), spec_(spec), data_(data) {
    if (data_.size() != spec_.args.size()) {
      fail("", "the reference got " + std::to_string(data_.size()) + " arguments for " +
                   std::to_string(spec_.args.size()) + " in the spec");
    }
  }

  /// A scalar int argument, checked to lie in [lo, hi].
  int64_t integer(const char* name, int64_t lo = 0, int64_t hi = INT32_MAX) const {
    const ArgSpec& a = spec_.args[find(name, ArgKind::scalar)];
    if (a.type != ElemType::i32) fail(name, "must be an int scalar");
    if (!(a.value >= double(lo) && a.value <= double(hi)) || std::floor(a.value) != a.value) {
      fail(name, "value " + std::to_string(a.value) + " must be an integer in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "]");
    }
    return static_cast<int64_t>(a.value);
  }

  float real(const char* name) const {
    const ArgSpec& a = spec_.args[find(name, ArgKind::scalar)];
    if (a.type != ElemType::f32) fail(name, "must be a float scalar");
    return static_cast<float>(a.value);
  }

  /// A float buffer of at least `need` elements.
  float* f32(const char* name, size_t need) { return buffer<float>(name, ElemType::f32, "float", need); }
  /// An int buffer of at least `need` elements.
  int32_t* i32(const char* name, size_t need) { return buffer<int32_t>(name, ElemType::i32, "int", need); }
  /// Element count of a buffer.
  size_t count(const char* name) const { return spec_.args[find(name, ArgKind::buffer)].count; }

  [[noreturn]] void fail(const std::string& arg, const std::string& what) const {
    const std::string where = spec_.path.empty() ? spec_.name : spec_.path;
    const std::string argument = arg.empty() ? "" : ": argument '" + arg + "'";
    throw SpecError(where + ": reference kernels:" + kernel_ + argument + ": " + what);
  }

 private:
  size_t find(const char* name, ArgKind kind) const {
    for (size_t i = 0; i < spec_.args.size(); ++i) {
      if (spec_.args[i].name == name) {
        if (spec_.args[i].kind != kind) fail(name, kind == ArgKind::buffer ? "must be a buffer" : "must be a scalar");
        return i;
      }
    }
    fail(name, "is missing");
  }

  template <typename T>
  T* buffer(const char* name, ElemType type, const char* type_name, size_t need) {
    const size_t i = find(name, ArgKind::buffer);
    const ArgSpec& a = spec_.args[i];
    if (a.type != type) fail(name, std::string("must be a ") + type_name + " buffer");
    if (a.count < need) fail(name, "has " + std::to_string(a.count) + " elements, needs " + std::to_string(need));
    if (data_[i].bytes < need * sizeof(T) || data_[i].storage.size() * sizeof(uint64_t) < need * sizeof(T)) {
      fail(name, "host data holds fewer than " + std::to_string(need) + " elements");
    }
    return data_[i].as<T>();
  }

  const char* kernel_;
  const Spec& spec_;
  std::vector<ArgData>& data_;
};

size_t sq(int64_t n) { return size_t(n) * size_t(n); }

// ---------------------------------------------------------------------------------------------------------------
// 2DCONV
// ---------------------------------------------------------------------------------------------------------------
constexpr float W00 = 0.25f, W01 = -0.5f, W02 = 0.75f;
constexpr float W10 = -0.125f, W11 = 0.375f, W12 = -0.625f;
constexpr float W20 = 0.5f, W21 = 0.875f, W22 = -0.25f;

void conv2d(const Spec& spec, std::vector<ArgData>& data) {
  Args a("conv2d", spec, data);
  const size_t n = size_t(a.integer("n")), m = size_t(a.integer("m"));
  const float* A = a.f32("A", n * m);
  float* B = a.f32("B", n * m);
  for (size_t i = 1; i + 1 < n; ++i) {
    const float* up = A + (i - 1) * m;
    const float* mid = up + m;
    const float* down = mid + m;
    for (size_t j = 1; j + 1 < m; ++j) {
      float acc = W00 * up[j - 1];
      acc += W01 * up[j];
      acc += W02 * up[j + 1];
      acc += W10 * mid[j - 1];
      acc += W11 * mid[j];
      acc += W12 * mid[j + 1];
      acc += W20 * down[j - 1];
      acc += W21 * down[j];
      acc += W22 * down[j + 1];
      B[i * m + j] = acc;
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Matrix-vector products over an n x n row-major matrix
// ---------------------------------------------------------------------------------------------------------------

/// out[i] = init[i] + sum_j A[i][j] * v[j] (init null: 0), j in order.
void rows_times(size_t n, const float* A, const float* v, const float* init, float* out) {
  for (size_t i = 0; i < n; ++i) {
    const float* row = A + i * n;
    float acc = init ? init[i] : 0.0f;
    for (size_t j = 0; j < n; ++j) acc += row[j] * v[j];
    out[i] = acc;
  }
}

/// out[j] = init[j] + sum_i A[i][j] * v[i] (init null: 0), i in order for every j.
void cols_times(size_t n, const float* A, const float* v, const float* init, float* out) {
  std::vector<float> acc(n, 0.0f);
  if (init) acc.assign(init, init + n);
  for (size_t i = 0; i < n; ++i) {
    const float* row = A + i * n;
    const float vi = v[i];
    for (size_t j = 0; j < n; ++j) acc[j] += row[j] * vi;
  }
  for (size_t j = 0; j < n; ++j) out[j] = acc[j];
}

void atax1(const Spec& spec, std::vector<ArgData>& data) {
  Args a("atax1", spec, data);
  const size_t n = size_t(a.integer("n"));
  rows_times(n, a.f32("A", sq(n)), a.f32("x", n), nullptr, a.f32("tmp", n));
}

void atax2(const Spec& spec, std::vector<ArgData>& data) {
  Args a("atax2", spec, data);
  const size_t n = size_t(a.integer("n"));
  cols_times(n, a.f32("A", sq(n)), a.f32("tmp", n), nullptr, a.f32("y", n));
}

void bicg1(const Spec& spec, std::vector<ArgData>& data) {
  Args a("bicg1", spec, data);
  const size_t n = size_t(a.integer("n"));
  cols_times(n, a.f32("A", sq(n)), a.f32("r", n), nullptr, a.f32("s", n));
}

void bicg2(const Spec& spec, std::vector<ArgData>& data) {
  Args a("bicg2", spec, data);
  const size_t n = size_t(a.integer("n"));
  rows_times(n, a.f32("A", sq(n)), a.f32("p", n), nullptr, a.f32("q", n));
}

void mvt1(const Spec& spec, std::vector<ArgData>& data) {
  Args a("mvt1", spec, data);
  const size_t n = size_t(a.integer("n"));
  float* x1 = a.f32("x1", n);
  rows_times(n, a.f32("A", sq(n)), a.f32("y1", n), x1, x1);
}

void mvt2(const Spec& spec, std::vector<ArgData>& data) {
  Args a("mvt2", spec, data);
  const size_t n = size_t(a.integer("n"));
  float* x2 = a.f32("x2", n);
  cols_times(n, a.f32("A", sq(n)), a.f32("y2", n), x2, x2);
}

void gesummv(const Spec& spec, std::vector<ArgData>& data) {
  Args a("gesummv", spec, data);
  const size_t n = size_t(a.integer("n"));
  const float* A = a.f32("A", sq(n));
  const float* B = a.f32("B", sq(n));
  const float* x = a.f32("x", n);
  float* y = a.f32("y", n);
  const float alpha = a.real("alpha"), beta = a.real("beta");
  for (size_t i = 0; i < n; ++i) {
    float sa = 0.0f, sb = 0.0f;
    for (size_t j = 0; j < n; ++j) {
      sa += A[i * n + j] * x[j];
      sb += B[i * n + j] * x[j];
    }
    y[i] = alpha * sa + beta * sb;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// FDTD-2D
// ---------------------------------------------------------------------------------------------------------------

void fdtd1(const Spec& spec, std::vector<ArgData>& data) {
  Args a("fdtd1", spec, data);
  const size_t nx = size_t(a.integer("nx")), ny = size_t(a.integer("ny"));
  const size_t t = size_t(a.integer("t"));
  float* ey = a.f32("ey", nx * ny);
  const float* hz = a.f32("hz", nx * ny);
  const float* fict = a.f32("fict", t + 1);
  for (size_t j = 0; j < ny && nx > 0; ++j) ey[j] = fict[t];
  for (size_t i = 1; i < nx; ++i) {
    for (size_t j = 0; j < ny; ++j) {
      const size_t p = i * ny + j;
      ey[p] = ey[p] - 0.5f * (hz[p] - hz[p - ny]);
    }
  }
}

void fdtd2(const Spec& spec, std::vector<ArgData>& data) {
  Args a("fdtd2", spec, data);
  const size_t nx = size_t(a.integer("nx")), ny = size_t(a.integer("ny"));
  float* ex = a.f32("ex", nx * ny);
  const float* hz = a.f32("hz", nx * ny);
  for (size_t i = 0; i < nx; ++i) {
    for (size_t j = 1; j < ny; ++j) {
      const size_t p = i * ny + j;
      ex[p] = ex[p] - 0.5f * (hz[p] - hz[p - 1]);
    }
  }
}

void fdtd3(const Spec& spec, std::vector<ArgData>& data) {
  Args a("fdtd3", spec, data);
  const size_t nx = size_t(a.integer("nx")), ny = size_t(a.integer("ny"));
  float* hz = a.f32("hz", nx * ny);
  const float* ex = a.f32("ex", nx * ny);
  const float* ey = a.f32("ey", nx * ny);
  for (size_t i = 0; i + 1 < nx; ++i) {
    for (size_t j = 0; j + 1 < ny; ++j) {
      const size_t p = i * ny + j;
      hz[p] = hz[p] - 0.7f * (ex[p + 1] - ex[p] + ey[p + ny] - ey[p]);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// GEMM, SYR2K
// ---------------------------------------------------------------------------------------------------------------

void gemm(const Spec& spec, std::vector<ArgData>& data) {
  Args a("gemm", spec, data);
  const size_t ni = size_t(a.integer("ni")), nj = size_t(a.integer("nj")), nk = size_t(a.integer("nk"));
  const float* A = a.f32("A", ni * nk);
  const float* B = a.f32("B", nk * nj);
  float* C = a.f32("C", ni * nj);
  const float alpha = a.real("alpha"), beta = a.real("beta");
  std::vector<float> acc(nj);
  for (size_t i = 0; i < ni; ++i) {
    acc.assign(nj, 0.0f);
    for (size_t k = 0; k < nk; ++k) {  // every acc[j] still adds its terms in k order
      const float aik = A[i * nk + k];
      const float* b = B + k * nj;
      for (size_t j = 0; j < nj; ++j) acc[j] += aik * b[j];
    }
    float* c = C + i * nj;
    for (size_t j = 0; j < nj; ++j) c[j] = beta * c[j] + alpha * acc[j];
  }
}

void syr2k(const Spec& spec, std::vector<ArgData>& data) {
  Args a("syr2k", spec, data);
  const size_t n = size_t(a.integer("n")), m = size_t(a.integer("m"));
  const float* A = a.f32("A", n * m);
  const float* B = a.f32("B", n * m);
  float* C = a.f32("C", n * n);
  const float alpha = a.real("alpha"), beta = a.real("beta");
  for (size_t i = 0; i < n; ++i) {
    const float* ai = A + i * m;
    const float* bi = B + i * m;
    for (size_t j = 0; j < n; ++j) {
      const float* aj = A + j * m;
      const float* bj = B + j * m;
      float acc = 0.0f;
      for (size_t k = 0; k < m; ++k) {
        acc += ai[k] * bj[k];
        acc += bi[k] * aj[k];
      }
      C[i * n + j] = beta * C[i * n + j] + alpha * acc;
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// CSR: SpMV, PageRank
// ---------------------------------------------------------------------------------------------------------------

/// Checks a CSR row pointer array of n+1 entries against `entries` stored elements, and every index in
/// idx[rowptr[0] .. rowptr[n]) against `bound`.
void check_csr(const Args& a, const char* rowptr_name, const int32_t* rowptr, size_t n, const char* idx_name,
               const int32_t* idx, size_t entries, size_t bound) {
  if (rowptr[0] < 0) a.fail(rowptr_name, "rowptr[0] is negative");
  for (size_t i = 0; i < n; ++i) {
    if (rowptr[i + 1] < rowptr[i]) a.fail(rowptr_name, "decreases at row " + std::to_string(i));
  }
  if (size_t(rowptr[n]) > entries) {
    a.fail(rowptr_name,
           "ends at " + std::to_string(rowptr[n]) + ", beyond the " + std::to_string(entries) + " stored elements");
  }
  for (size_t k = size_t(rowptr[0]); k < size_t(rowptr[n]); ++k) {
    if (idx[k] < 0 || size_t(idx[k]) >= bound) {
      a.fail(idx_name, "element " + std::to_string(k) + " = " + std::to_string(idx[k]) + " is outside [0, " +
                           std::to_string(bound) + ")");
    }
  }
}

void spmv(const Spec& spec, std::vector<ArgData>& data) {
  Args a("spmv", spec, data);
  const size_t n = size_t(a.integer("n", 0, INT32_MAX - 1));
  const int32_t* rowptr = a.i32("rowptr", n + 1);
  const size_t nnz = a.count("col");
  const int32_t* col = a.i32("col", nnz);
  const float* val = a.f32("val", nnz);
  const size_t nx = a.count("x");
  const float* x = a.f32("x", nx);
  float* y = a.f32("y", n);
  check_csr(a, "rowptr", rowptr, n, "col", col, nnz, nx);
  for (size_t i = 0; i < n; ++i) {
    float acc = 0.0f;
    for (int32_t k = rowptr[i]; k < rowptr[i + 1]; ++k) acc += val[k] * x[col[k]];
    y[i] = acc;
  }
}

void pagerank(const Spec& spec, std::vector<ArgData>& data) {
  Args a("pagerank", spec, data);
  const size_t n = size_t(a.integer("n", 1, INT32_MAX - 1));
  const int32_t* rowptr = a.i32("rowptr", n + 1);
  const size_t nnz = a.count("src");
  const int32_t* src = a.i32("src", nnz);
  const int32_t* outdeg = a.i32("outdeg", n);
  const float* rank = a.f32("rank", n);
  float* rank_new = a.f32("rank_new", n);
  const float d = a.real("d");
  check_csr(a, "rowptr", rowptr, n, "src", src, nnz, n);
  for (size_t j = 0; j < n; ++j) {
    if (outdeg[j] < 1) a.fail("outdeg", "node " + std::to_string(j) + " has out-degree " + std::to_string(outdeg[j]));
  }
  const float base = (1.0f - d) / float(n);
  for (size_t i = 0; i < n; ++i) {
    float acc = 0.0f;
    for (int32_t k = rowptr[i]; k < rowptr[i + 1]; ++k) {
      const int32_t s = src[k];
      acc += rank[s] / float(outdeg[s]);
    }
    rank_new[i] = base + d * acc;
  }
}

struct Entry {
  const char* name;
  void (*fn)(const Spec&, std::vector<ArgData>&);
};

const Entry kEntries[] = {
    {"conv2d", conv2d}, {"atax1", atax1}, {"atax2", atax2}, {"bicg1", bicg1}, {"bicg2", bicg2},
    {"fdtd1", fdtd1},   {"fdtd2", fdtd2}, {"fdtd3", fdtd3}, {"gemm", gemm},   {"gesummv", gesummv},
    {"mvt1", mvt1},     {"mvt2", mvt2},   {"syr2k", syr2k}, {"spmv", spmv},   {"pagerank", pagerank},
};

}  // namespace

const std::vector<std::string>& names() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> v;
    for (const Entry& e : kEntries) v.emplace_back(e.name);
    return v;
  }();
  return all;
}

void register_references() {
  for (const Entry& e : kEntries) register_reference(std::string("kernels:") + e.name, e.fn);
}

}  // namespace dop::kernels

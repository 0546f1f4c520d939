// CPU reference of the span families: float arithmetic in the kernel's order of operations for every output (a
// reduction runs in index order), on all host threads. Loops run across independent outputs innermost where that
// keeps each output's order, so that the compiler can vectorize them: the largest products take seconds, not hours.
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "dop/synthetic.hpp"
#include "internal.hpp"

namespace dop::synthetic::detail {

namespace {

// Runs f(begin, end) over [0, n) on up to the host's threads, fewer when there is little work (`ops` in all).
template <typename F>
void parallel_for(size_t n, double ops, F f) {
  const size_t hw = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads = std::min({hw, n, size_t(ops / 4e6) + 1});
  if (threads <= 1) return f(size_t(0), n);
  std::vector<std::thread> ts;
  for (size_t t = 0; t < threads; ++t) ts.emplace_back(f, n * t / threads, n * (t + 1) / threads);
  for (auto& t : ts) t.join();
}

struct Chain {
  int gamma = 0;
  float c1 = 0, c2 = 0;
  float operator()(float t) const {
    for (int r = 0; r < gamma; ++r) t = t * c1 + c2;
    return t;
  }
};

class Args {
 public:
  Args(const Spec& spec, std::vector<ArgData>& args) : spec_(spec), args_(args) {
    if (args.size() != spec.args.size()) fail(spec, "argument data does not match the spec");
  }
  size_t extent(const std::string& name) const {
    const double v = spec_.args[find_arg(spec_, name, ArgKind::scalar)].value;
    if (!(v >= 1)) fail(spec_, name + " must be positive");
    return size_t(v);
  }
  float value(const std::string& name) const { return float(spec_.args[find_arg(spec_, name, ArgKind::scalar)].value); }
  float* buffer(const std::string& name, size_t count) const { return typed<float>(name, count, ElemType::f32); }
  const int32_t* indices(const std::string& name, size_t count) const {
    return typed<int32_t>(name, count, ElemType::i32);
  }

 private:
  template <typename T>
  T* typed(const std::string& name, size_t count, ElemType type) const {
    const size_t i = find_arg(spec_, name, ArgKind::buffer);
    if (spec_.args[i].type != type)
      fail(spec_, "buffer '" + name + "' must be " + (type == ElemType::f32 ? "float" : "int"));
    if (spec_.args[i].count < count || args_[i].bytes < count * sizeof(T))
      fail(spec_, "buffer '" + name + "' holds fewer than " + std::to_string(count) + " elements");
    return args_[i].as<T>();
  }

  const Spec& spec_;
  std::vector<ArgData>& args_;
};

void triad(const Args& a, const Chain& f) {
  const size_t n = a.extent("N");
  const float* A = a.buffer("A", n);
  const float* B = a.buffer("B", n);
  float* out = a.buffer("Out", n);
  const float s = a.value("s");
  parallel_for(n, double(n) * (1 + f.gamma), [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) out[i] = f(A[i] + s * B[i]);
  });
}

void matmul(const Args& a, const Chain& f, bool bt) {
  const size_t m = a.extent("M"), n = a.extent("N"), k = a.extent("K");
  const float* A = a.buffer("A", m * k);
  const float* B = a.buffer("B", k * n);
  float* C = a.buffer("C", m * n);
  const double ops = double(m) * double(n) * double(k) * (1 + f.gamma);
  parallel_for(m, ops, [&](size_t b, size_t e) {
    std::vector<float> acc(n);
    for (size_t i = b; i < e; ++i) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (size_t kk = 0; kk < k; ++kk) {  // every acc[j] sums its terms in k order, as the kernel does
        const float x = A[i * k + kk];
        if (bt)
          for (size_t j = 0; j < n; ++j) acc[j] += f(x * B[j * k + kk]);
        else
          for (size_t j = 0; j < n; ++j) acc[j] += f(x * B[kk * n + j]);
      }
      std::copy(acc.begin(), acc.end(), C + i * n);
    }
  });
}

void matvec(const Args& a, const Chain& f, bool rows) {
  const size_t m = a.extent("M"), n = a.extent("N");
  const float* A = a.buffer("A", m * n);
  const float* x = a.buffer("x", rows ? n : m);
  float* y = a.buffer("y", rows ? m : n);
  const double ops = double(m) * double(n) * (1 + f.gamma);
  if (rows) {  // blocks of rows side by side, each summed in column order
    constexpr size_t kBlock = 16;
    parallel_for((m + kBlock - 1) / kBlock, ops, [&](size_t b, size_t e) {
      for (size_t blk = b; blk < e; ++blk) {
        const size_t i0 = blk * kBlock, rows_here = std::min(kBlock, m - i0);
        float acc[kBlock] = {};
        for (size_t j = 0; j < n; ++j)
          for (size_t r = 0; r < rows_here; ++r) acc[r] += f(A[(i0 + r) * n + j] * x[j]);
        std::copy(acc, acc + rows_here, y + i0);
      }
    });
  } else {  // every column's sum runs in row order
    parallel_for(n, ops, [&](size_t b, size_t e) {
      std::vector<float> acc(e - b, 0.0f);
      for (size_t i = 0; i < m; ++i)
        for (size_t j = b; j < e; ++j) acc[j - b] += f(A[i * n + j] * x[i]);
      std::copy(acc.begin(), acc.end(), y + b);
    });
  }
}

void stencil(const Args& a, const Chain& f, int radius) {
  const size_t m = a.extent("M"), n = a.extent("N");
  const auto r = size_t(radius);
  const float* in = a.buffer("In", m * n);
  float* out = a.buffer("Out", m * n);
  const float w0 = float(stencil_weight(0));
  std::fill(out, out + m * n, 0.0f);  // the border is not written: it keeps the output's initial zero
  if (m <= 2 * r || n <= 2 * r) return;
  parallel_for(m - 2 * r, double(m) * double(n) * double(4 * r + 1) * (1 + f.gamma), [&](size_t b, size_t e) {
    for (size_t i = r + b; i < r + e; ++i)
      for (size_t j = r; j < n - r; ++j) {
        float acc = f(w0 * in[i * n + j]);
        float w = 0.25f;
        for (size_t d = 1; d <= r; ++d) {
          acc += f(w * in[(i - d) * n + j]);
          acc += f(w * in[(i + d) * n + j]);
          acc += f(w * in[i * n + (j - d)]);
          acc += f(w * in[i * n + (j + d)]);
          w *= 0.5f;
        }
        out[i * n + j] = acc;
      }
  });
}

void gather(const Spec& spec, const Args& a, const Chain& f) {
  const size_t n = a.extent("N"), k = a.extent("K");
  const float* A = a.buffer("A", n * k);
  const float* x = a.buffer("x", n);
  float* y = a.buffer("y", n);
  const int32_t* C = a.indices("C", n * k);
  for (size_t e = 0; e < n * k; ++e)
    if (C[e] < 0 || size_t(C[e]) >= n)
      fail(spec, "C[" + std::to_string(e) + "] = " + std::to_string(C[e]) + " is not a row of x");
  parallel_for(n, double(n) * double(k) * (1 + f.gamma), [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      float acc = 0.0f;
      for (size_t j = 0; j < k; ++j) acc += f(A[i * k + j] * x[C[i * k + j]]);
      y[i] = acc;
    }
  });
}

}  // namespace

void span_reference(const Params& p, const Spec& spec, std::vector<ArgData>& args) {
  const Args a(spec, args);
  Chain f;
  f.gamma = p.gamma;
  if (p.gamma > 0) {
    f.c1 = a.value("c1");
    f.c2 = a.value("c2");
  }
  switch (p.family) {
    case Family::triad:
      return triad(a, f);
    case Family::matmul:
    case Family::matmul_bt:
      return matmul(a, f, p.family == Family::matmul_bt);
    case Family::matvec_rows:
    case Family::matvec_cols:
      return matvec(a, f, p.family == Family::matvec_rows);
    case Family::gather:
      return gather(spec, a, f);
    default:
      return stencil(a, f, p.radius);
  }
}

}  // namespace dop::synthetic::detail

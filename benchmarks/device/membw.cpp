// Host memory bandwidth of one process, with no OpenCL: fdtd2's update (ex[i] -= 0.5 * (hz[i] - hz[i - 1])) over
// two arrays of N floats, on T threads, R times, after a first touch on F threads; A times over, each time in freshly
// allocated arrays. Run in several fresh processes, it says whether where a process's memory lies alone can make the
// same work slower: from one allocation to the next, or only from one process to the next
// (benchmarks/device/h100.sh membw).
//   g++ -O2 -pthread membw.cpp -o membw && ./membw [N=530841600] [T=hardware threads] [R=5] [A=1] [F=T]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

template <typename F>
static void parallel(unsigned threads, size_t n, F f) {
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < threads; ++t)
    ts.emplace_back([&, t] { f(n * t / threads, n * (t + 1) / threads); });
  for (auto& t : ts) t.join();
}

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : size_t(23040) * 23040;
  const unsigned threads = argc > 2 ? unsigned(std::atoi(argv[2])) : std::max(1u, std::thread::hardware_concurrency());
  const int repeat = argc > 3 ? std::atoi(argv[3]) : 5;
  const int allocations = argc > 4 ? std::atoi(argv[4]) : 1;
  const unsigned touch = argc > 5 ? unsigned(std::atoi(argv[5])) : threads;
  for (int a = 0; a < allocations; ++a) {
    std::unique_ptr<float[]> ex(new float[n]), hz(new float[n]);
    parallel(touch, n, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) ex[i] = hz[i] = float(i % 97);
    });
    std::printf("n %zu threads %u touched by %u allocation %d ms:", n, threads, touch, a);
    for (int r = 0; r < repeat; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      parallel(threads, n, [&](size_t b, size_t e) {
        for (size_t i = std::max<size_t>(b, 1); i < e; ++i) ex[i] -= 0.5f * (hz[i] - hz[i - 1]);
      });
      std::printf(" %.1f", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf("  (check %g)\n", double(ex[n / 2]));
    std::fflush(stdout);
  }
  return 0;
}

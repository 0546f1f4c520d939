// dop report: what a sweep dataset shows — per workload the best configuration, the mean normalised performance of
// every configuration of the grid (a table and an SVG heat map, as Dopia's Fig. 12), the fixed baselines (CPU only,
// GPU only, ALL, best constant) and the spread between repeats.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "commands.hpp"
#include "dop/dataset.hpp"
#include "stats.hpp"

namespace dop::cli {

namespace {

struct ReportFlags {
  std::string data;
  std::string svg;
  std::string set;
};

struct Row {
  std::string workload, set;
  double cpu = 0, gpu = 0, median = 0, min = 0, max = 0;
  int64_t cpu_work_groups = -1, gpu_work_groups = -1;  // as the engine distributed them (-1: not in the dataset)
};

// The valid rows of a dataset (plain or gzip-compressed; a torn last line dropped), of one set when `only_set` is
// given, read as the trainer reads them (read_measurement): `invalid` counts the rows not used; a row marked valid
// whose time is no positive finite number is one, with a warning naming it; a configuration measured twice is
// refused.
std::vector<Row> load(const std::string& path, const std::string& only_set, size_t& invalid) {
  const DatasetTable d = read_dataset(path);
  const DatasetColumns& c = d.columns;
  std::vector<Row> rows;
  DuplicateRowCheck duplicates;
  invalid = 0;
  UnthrottledRows unthrottled;
  for (const auto& row : d.csv.rows) {
    const DatasetRowReader r(d.csv, row);
    const DatasetMeasurement m = read_measurement(r, c);
    duplicates.add(r, c, m);
    if (!only_set.empty() && r.str(c.set) != only_set) continue;
    unthrottled.add(r, m);
    if (!m.valid) {
      ++invalid;
      if (r.str(c.valid) == "1")  // the sweep's own invalid rows (valid = 0) are counted in the summary
        std::fprintf(stderr, "dop: warning: %s: invalid row (%s), not used\n", r.where().c_str(), m.why.c_str());
      continue;
    }
    // A workload with its data on the GPU is another decision than with its data on the host (docs/dataset.md).
    const std::string name = r.str(c.workload) + (read_data(r, c).on_gpu ? " [data on gpu]" : "");
    rows.push_back({name, r.str(c.set), m.cpu_util, m.gpu_util, m.time_ms_median, m.time_ms_min, m.time_ms_max,
                    m.cpu_work_groups, m.gpu_work_groups});
  }
  if (const std::string w = unthrottled.warning(); !w.empty()) std::fprintf(stderr, "dop: warning: %s\n", w.c_str());
  return rows;
}

std::string color(double v) {  // 0 -> dark blue, 1 -> yellow (viridis-like ramp)
  const double stops[5][3] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
  v = std::clamp(v, 0.0, 1.0) * 4;
  const int i = std::min(3, int(v));
  const double t = v - i;
  char b[16];
  std::snprintf(b, sizeof b, "#%02x%02x%02x", int(stops[i][0] + t * (stops[i + 1][0] - stops[i][0])),
                int(stops[i][1] + t * (stops[i + 1][1] - stops[i][1])),
                int(stops[i][2] + t * (stops[i + 1][2] - stops[i][2])));
  return b;
}

// Where each workload's best configuration ran, by the work-groups the engine gave each device: a configuration of
// both devices whose run left one idle ran on the other alone. Where both ran, how much longer the best run on one
// device took: what co-execution gained.
void print_where_best_ran(const std::map<std::string, std::vector<const Row*>>& by_w,
                          const std::map<std::string, const Row*>& best_of) {
  size_t both = 0, cpu = 0, gpu = 0;
  std::vector<double> gains;  // best one-device time / best time, where both devices ran the best
  for (const auto& [w, rs] : by_w) {
    const Row* best = best_of.at(w);
    if (best->cpu_work_groups < 0 || best->gpu_work_groups < 0) continue;  // a dataset without the counts
    if (best->cpu_work_groups == 0) {
      ++gpu;
    } else if (best->gpu_work_groups == 0) {
      ++cpu;
    } else {
      ++both;
      double one = INFINITY;
      for (const Row* r : rs)
        if (r->cpu_work_groups == 0 || r->gpu_work_groups == 0) one = std::min(one, r->median);
      if (std::isfinite(one)) gains.push_back(one / best->median);
    }
  }
  if (both + cpu + gpu == 0) return;
  std::printf(
      "\nwhere the best configuration ran (work-groups per device; a device left idle does not count):\n"
      "  both devices %zu, the CPU alone %zu, the GPU alone %zu (of %zu workloads)\n",
      both, cpu, gpu, by_w.size());
  if (!gains.empty())
    std::printf(
        "  where both ran: the best run on one device took %.3fx its time at the median (least %.3fx, "
        "greatest %.3fx)\n",
        median(gains), *std::min_element(gains.begin(), gains.end()), *std::max_element(gains.begin(), gains.end()));
}

void run_report(const ReportFlags& f) {
  size_t invalid = 0;
  const auto rows = load(f.data, f.set, invalid);
  if (rows.empty()) throw std::runtime_error(f.data + ": no valid rows" + (f.set.empty() ? "" : " in set " + f.set));
  std::map<std::string, std::vector<const Row*>> by_w;
  std::set<double> cpus, gpus;
  for (const auto& r : rows) {
    by_w[r.workload].push_back(&r);
    cpus.insert(r.cpu);
    gpus.insert(r.gpu);
  }
  // Normalised performance of every row: best time of its workload / its time (1 = the best configuration).
  std::map<std::pair<double, double>, std::vector<double>> norm;
  std::map<std::pair<double, double>, int> wins;
  std::vector<double> spread;
  std::map<std::string, const Row*> best_of;  // each workload's best row
  size_t complete = 0;
  for (const auto& [w, rs] : by_w) {
    double best = 1e300;
    const Row* arg = nullptr;
    for (const Row* r : rs)
      if (r->median < best) best = r->median, arg = r;
    best_of[w] = arg;
    ++wins[{arg->cpu, arg->gpu}];
    if (rs.size() == (cpus.size() * gpus.size() - 1)) ++complete;
    for (const Row* r : rs) {
      norm[{r->cpu, r->gpu}].push_back(best / r->median);
      if (std::isfinite(r->max - r->min)) spread.push_back((r->max - r->min) / r->median);
    }
  }
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0.0 : s / double(v.size());
  };
  std::printf("%s: %zu valid rows (%zu invalid skipped), %zu workloads (%zu with the full grid)%s\n", f.data.c_str(),
              rows.size(), invalid, by_w.size(), complete, f.set.empty() ? "" : (", set " + f.set).c_str());
  std::printf("spread between repeats, (max-min)/median: median %.1f%%, 90th percentile %.1f%%\n\n",
              100 * quantile(spread, 0.5), 100 * quantile(spread, 0.9));

  std::printf("mean normalised performance (best time / time), rows CPU util, columns GPU util:\n%8s", "cpu\\gpu");
  for (double g : gpus) std::printf(" %6.3g", g);
  std::printf("\n");
  for (auto c = cpus.rbegin(); c != cpus.rend(); ++c) {
    std::printf("%8.3g", *c);
    for (double g : gpus) {
      auto it = norm.find({*c, g});
      if (it == norm.end())
        std::printf(" %6s", "-");
      else
        std::printf(" %6.3f", mean(it->second));
    }
    std::printf("\n");
  }
  std::pair<double, double> best_const{0, 0};
  double best_const_v = -1;
  for (const auto& [cfg, v] : norm)
    if (mean(v) > best_const_v) best_const_v = mean(v), best_const = cfg;
  const double cmax = *cpus.rbegin(), gmax = *gpus.rbegin();
  auto base = [&](double c, double g) {
    auto it = norm.find({c, g});
    return it == norm.end() ? std::string("-") : std::to_string(mean(it->second)).substr(0, 5);
  };
  std::printf(
      "\nbaselines (mean normalised performance): CPU only %s, GPU only %s, ALL %s, best constant (%.3g,%.3g) %.3f\n",
      base(cmax, 0).c_str(), base(0, gmax).c_str(), base(cmax, gmax).c_str(), best_const.first, best_const.second,
      best_const_v);
  std::printf("\nbest configuration per workload (count of workloads):\n");
  std::vector<std::pair<int, std::pair<double, double>>> ws;
  for (const auto& [cfg, n] : wins) ws.push_back({n, cfg});
  std::sort(ws.rbegin(), ws.rend());
  for (const auto& [n, cfg] : ws) std::printf("  cpu %-5.3g gpu %-5.3g %4d\n", cfg.first, cfg.second, n);
  print_where_best_ran(by_w, best_of);

  if (!f.svg.empty()) {
    const int cell = 56, left = 70, top = 40;
    const int w = left + cell * int(gpus.size()) + 20, h = top + cell * int(cpus.size()) + 60;
    std::ofstream o(f.svg);
    if (!o) throw std::runtime_error("cannot write " + f.svg);
    o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << h
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
    o << "<text x=\"" << left << "\" y=\"20\" font-size=\"14\">Mean normalised performance, " << by_w.size()
      << " workloads</text>\n";
    int row = 0;
    for (auto c = cpus.rbegin(); c != cpus.rend(); ++c, ++row) {
      o << "<text x=\"" << left - 8 << "\" y=\"" << top + row * cell + cell / 2 + 4 << "\" text-anchor=\"end\">" << *c
        << "</text>\n";
      int colx = 0;
      for (double g : gpus) {
        const int x = left + colx * cell, y = top + row * cell;
        auto it = norm.find({*c, g});
        if (it != norm.end()) {
          const double v = mean(it->second);
          char txt[16];
          std::snprintf(txt, sizeof txt, "%.2f", v);
          o << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << cell << "\" height=\"" << cell << "\" fill=\""
            << color(v) << "\"/>\n<text x=\"" << x + cell / 2 << "\" y=\"" << y + cell / 2 + 4
            << "\" text-anchor=\"middle\" fill=\"" << (v > 0.6 ? "black" : "white") << "\">" << txt << "</text>\n";
        }
        ++colx;
      }
    }
    int colx = 0;
    for (double g : gpus)
      o << "<text x=\"" << left + colx++ * cell + cell / 2 << "\" y=\"" << top + int(cpus.size()) * cell + 16
        << "\" text-anchor=\"middle\">" << g << "</text>\n";
    o << "<text x=\"" << left + cell * int(gpus.size()) / 2 << "\" y=\"" << h - 12
      << "\" text-anchor=\"middle\">GPU utilisation</text>\n";
    o << "<text x=\"14\" y=\"" << top + cell * int(cpus.size()) / 2 << "\" transform=\"rotate(-90 14 "
      << top + cell * int(cpus.size()) / 2 << ")\" text-anchor=\"middle\">CPU utilisation</text>\n</svg>\n";
    std::printf("\nheat map written to %s\n", f.svg.c_str());
  }
}

}  // namespace

void add_report(CLI::App& app) {
  auto* cmd = app.add_subcommand("report", "Summarise a sweep dataset: best configurations, heat map, baselines");
  auto f = std::make_shared<ReportFlags>();
  cmd->add_option("data", f->data, "Sweep dataset (CSV)")->required();
  cmd->add_option("--svg", f->svg, "Write the heat map of mean normalised performance as SVG");
  cmd->add_option("--set", f->set, "Only rows of this set (paper, real, ...)");
  cmd->callback([f] { run_report(*f); });
}

}  // namespace dop::cli

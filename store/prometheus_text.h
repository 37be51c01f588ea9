// Writing Prometheus text exposition (format 0.0.4) lines: # HELP, # TYPE
// and samples with the caller's labels on each.
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace auxstore::prom {

class Metric {
 public:
  Metric(std::string* out, std::string_view labels) : out_(*out), labels_(labels) {}

  void Gauge(std::string_view name, std::string_view help, double v) {
    Head(name, help, "gauge");
    Sample(name, "", v);
  }
  void Counter(std::string_view name, std::string_view help, double v) {
    Head(name, help, "counter");
    Sample(name, "", v);
  }
  // One counter family with a sample per label set, e.g. result="hit".
  void Counter(std::string_view name, std::string_view help,
               std::initializer_list<std::pair<std::string_view, double>> samples) {
    Head(name, help, "counter");
    for (const auto& [label, v] : samples) Sample(name, label, v);
  }
  // A histogram from per-bucket counts: bucket i's upper bound is bounds[i];
  // the last bucket's counts go to +Inf only.
  template <size_t N>
  void Histogram(std::string_view name, std::string_view help, const uint64_t (&counts)[N],
                 const double (&bounds)[N], double sum) {
    Head(name, help, "histogram");
    uint64_t cumulative = 0;
    const std::string bucket = std::string(name) + "_bucket";
    for (size_t i = 0; i < N; ++i) {
      cumulative += counts[i];
      if (i + 1 == N) break;
      char le[48];
      std::snprintf(le, sizeof le, "le=\"%.9g\"", bounds[i]);
      Sample(bucket, le, static_cast<double>(cumulative));
    }
    Sample(bucket, "le=\"+Inf\"", static_cast<double>(cumulative));
    Sample(std::string(name) + "_sum", "", sum);
    Sample(std::string(name) + "_count", "", static_cast<double>(cumulative));
  }

 private:
  void Head(std::string_view name, std::string_view help, std::string_view type) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  void Sample(std::string_view name, std::string_view label, double v) {
    out_ += name;
    if (!label.empty() || !labels_.empty()) {
      out_ += '{';
      out_ += labels_;
      if (!label.empty() && !labels_.empty()) out_ += ',';
      out_ += label;
      out_ += '}';
    }
    char num[40];
    std::snprintf(num, sizeof num, " %.17g\n", v);
    out_ += num;
  }

  std::string& out_;
  std::string_view labels_;
};

}  // namespace auxstore::prom

#include "weft/core/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "weft/core/logging.h"

namespace weft::metrics {
namespace {

constexpr double kNano = 1e9;

// Label values may hold anything; the text format escapes backslash, quote and newline.
void AppendEscaped(const std::string& value, std::string* out) {
  for (char c : value) {
    if (c == '\\') {
      out->append("\\\\");
    } else if (c == '"') {
      out->append("\\\"");
    } else if (c == '\n') {
      out->append("\\n");
    } else {
      out->push_back(c);
    }
  }
}

// Shortest text that reads back as the same double ("0.00025", "1e+100", "+Inf").
std::string NumberText(double value) {
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", value);
  for (int precision = 1; precision < 17; ++precision) {
    char shorter[32];
    std::snprintf(shorter, sizeof(shorter), "%.*g", precision, value);
    if (std::strtod(shorter, nullptr) == value) return shorter;
  }
  return text;
}

void CheckLabelCount(const std::string& name, size_t names, size_t values) {
  WEFT_CHECK(names == values) << "metric " << name << " has " << names << " labels, not " << values;
}

}  // namespace

Histogram::Histogram(const std::vector<double>* bounds)
    : bounds_(bounds), buckets_(new std::atomic<int64_t>[bounds->size() + 1]) {
  for (size_t i = 0; i <= bounds_->size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double value) {
  const size_t bucket =
      std::lower_bound(bounds_->begin(), bounds_->end(), value) - bounds_->begin();
  buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_nano_.fetch_add(static_cast<int64_t>(std::llround(value * kNano)), std::memory_order_relaxed);
}

double Histogram::sum() const {
  return static_cast<double>(sum_nano_.load(std::memory_order_relaxed)) / kNano;
}

std::string Family::LabelText(const std::vector<std::string>& values,
                              const std::string& extra) const {
  if (values.empty() && extra.empty()) return "";
  std::string text = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) text.push_back(',');
    text.append(label_names_[i]).append("=\"");
    AppendEscaped(values[i], &text);
    text.push_back('"');
  }
  if (!extra.empty()) {
    if (!values.empty()) text.push_back(',');
    text.append(extra);
  }
  text.push_back('}');
  return text;
}

void Family::AppendHeader(const char* type, std::string* out) const {
  out->append("# HELP ").append(name_).append(" ").append(help_).append("\n");
  out->append("# TYPE ").append(name_).append(" ").append(type).append("\n");
}

Counter* CounterFamily::WithLabels(const std::vector<std::string>& values) {
  CheckLabelCount(name_, label_names_.size(), values.size());
  MutexLock lock(mu_);
  std::unique_ptr<metrics::Counter>& series = series_[values];
  if (series == nullptr) series = std::make_unique<metrics::Counter>();
  return series.get();
}

void CounterFamily::AppendText(std::string* out) const {
  AppendHeader("counter", out);
  MutexLock lock(mu_);
  for (const auto& [values, series] : series_) {
    out->append(name_).append(LabelText(values, "")).append(" ");
    out->append(std::to_string(series->value())).append("\n");
  }
}

Histogram* HistogramFamily::WithLabels(const std::vector<std::string>& values) {
  CheckLabelCount(name_, label_names_.size(), values.size());
  MutexLock lock(mu_);
  std::unique_ptr<metrics::Histogram>& series = series_[values];
  if (series == nullptr) series = std::make_unique<metrics::Histogram>(&bounds_);
  return series.get();
}

void HistogramFamily::AppendText(std::string* out) const {
  AppendHeader("histogram", out);
  MutexLock lock(mu_);
  for (const auto& [values, series] : series_) {
    // Read the buckets first and derive the count from them, so that a scrape racing an
    // observation still shows a count equal to its +Inf bucket.
    int64_t cumulative = 0;
    for (size_t i = 0; i <= bounds_.size(); ++i) {
      cumulative += series->bucket(i);
      const double bound = i < bounds_.size() ? bounds_[i] : INFINITY;
      out->append(name_).append("_bucket");
      out->append(LabelText(values, "le=\"" + NumberText(bound) + "\"")).append(" ");
      out->append(std::to_string(cumulative)).append("\n");
    }
    const std::string labels = LabelText(values, "");
    out->append(name_).append("_sum").append(labels).append(" ");
    out->append(NumberText(series->sum())).append("\n");
    out->append(name_).append("_count").append(labels).append(" ");
    out->append(std::to_string(cumulative)).append("\n");
  }
}

const std::vector<double>& LatencyBuckets() {
  static const std::vector<double>* bounds = [] {
    auto* made = new std::vector<double>();
    for (double bound = 50e-6; bound < 120; bound *= 2.5) made->push_back(bound);
    return made;
  }();
  return *bounds;
}

void RecordPeerBytes(const std::string& peer, int64_t sent, int64_t received) {
  static CounterFamily* const sent_bytes = Registry::Global().FindOrAddCounter(
      "weft_sent_bytes_total", "Bytes sent to a peer task (tensors and collectives).", {"peer"});
  static CounterFamily* const received_bytes = Registry::Global().FindOrAddCounter(
      "weft_received_bytes_total", "Bytes received from a peer task (tensors and collectives).",
      {"peer"});
  if (sent > 0) sent_bytes->WithLabels({peer})->Increment(sent);
  if (received > 0) received_bytes->WithLabels({peer})->Increment(received);
}

Registry& Registry::Global() {
  static Registry* registry = new Registry();
  return *registry;
}

CounterFamily* Registry::FindOrAddCounter(const std::string& name, const std::string& help,
                                          std::vector<std::string> label_names) {
  MutexLock lock(mu_);
  std::unique_ptr<Family>& family = families_[name];
  if (family == nullptr) {
    family = std::make_unique<CounterFamily>(name, help, std::move(label_names));
  }
  auto* counter = dynamic_cast<CounterFamily*>(family.get());
  WEFT_CHECK(counter != nullptr) << "metric " << name << " is not a counter";
  return counter;
}

HistogramFamily* Registry::FindOrAddHistogram(const std::string& name, const std::string& help,
                                              std::vector<std::string> label_names,
                                              std::vector<double> bounds) {
  WEFT_CHECK(std::is_sorted(bounds.begin(), bounds.end())) << "unsorted buckets of " << name;
  MutexLock lock(mu_);
  std::unique_ptr<Family>& family = families_[name];
  if (family == nullptr) {
    family =
        std::make_unique<HistogramFamily>(name, help, std::move(label_names), std::move(bounds));
  }
  auto* histogram = dynamic_cast<HistogramFamily*>(family.get());
  WEFT_CHECK(histogram != nullptr) << "metric " << name << " is not a histogram";
  return histogram;
}

std::string Registry::ExportText() const {
  std::string text;
  MutexLock lock(mu_);
  for (const auto& [name, family] : families_) family->AppendText(&text);
  return text;
}

}  // namespace weft::metrics

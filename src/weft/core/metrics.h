// Process-wide metrics: counters and histograms, each a family of series told apart by label
// values, that the runtime and the distributed layer record into and that a server exports as
// Prometheus text (`weft server --metrics-port`, docs/metrics.md). Recording into a series is
// lock-free (relaxed atomics); finding or making a series by its labels takes the family's lock, so
// hot paths keep the series they use. Families live for the process. Everything is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "weft/core/mutex.h"

namespace weft::metrics {

// One labelled series of a CounterFamily: a count that only goes up.
class Counter {
 public:
  void Increment(int64_t by = 1) { value_.fetch_add(by, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

// One labelled series of a HistogramFamily: how many observations fell at or below each of the
// family's bucket bounds, their count and their sum.
class Histogram {
 public:
  explicit Histogram(const std::vector<double>* bounds);
  void Observe(double value);
  int64_t count() const { return count_.load(std::memory_order_relaxed); }
  double sum() const;
  // Observations in bucket `i` alone (not cumulative); i == bounds.size() is the +Inf bucket.
  int64_t bucket(size_t i) const { return buckets_[i].load(std::memory_order_relaxed); }

 private:
  const std::vector<double>* const bounds_;
  std::unique_ptr<std::atomic<int64_t>[]> buckets_;
  std::atomic<int64_t> count_{0};
  // The sum in units of 1e-9, so that it stays an integer atomic: exact for the seconds and bytes
  // recorded here (a nanosecond resolution, and bytes well below 2^63 / 1e9 per process).
  std::atomic<int64_t> sum_nano_{0};
};

// What every family has: its name ("weft_steps_total"), its help line and its label names.
class Family {
 public:
  virtual ~Family() = default;
  const std::string& name() const { return name_; }
  // Appends this family in the Prometheus text format (HELP, TYPE, then a line per series).
  virtual void AppendText(std::string* out) const = 0;

 protected:
  Family(std::string name, std::string help, std::vector<std::string> label_names)
      : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)) {}
  // `{a="x",b="y"}` for these label values, with `extra` (`le="0.5"`) last; "" when none.
  std::string LabelText(const std::vector<std::string>& values, const std::string& extra) const;
  void AppendHeader(const char* type, std::string* out) const;

  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
};

class CounterFamily final : public Family {
 public:
  CounterFamily(std::string name, std::string help, std::vector<std::string> label_names)
      : Family(std::move(name), std::move(help), std::move(label_names)) {}
  // The series of these label values (one per label name), made at zero on first use; the pointer
  // stays valid for the process.
  Counter* WithLabels(const std::vector<std::string>& values);
  void AppendText(std::string* out) const override;

 private:
  mutable Mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<Counter>> series_ WEFT_GUARDED_BY(mu_);
};

class HistogramFamily final : public Family {
 public:
  // `bounds`: the buckets' upper bounds, ascending (a +Inf bucket is always added).
  HistogramFamily(std::string name, std::string help, std::vector<std::string> label_names,
                  std::vector<double> bounds)
      : Family(std::move(name), std::move(help), std::move(label_names)),
        bounds_(std::move(bounds)) {}
  Histogram* WithLabels(const std::vector<std::string>& values);
  void AppendText(std::string* out) const override;

 private:
  const std::vector<double> bounds_;
  mutable Mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<Histogram>> series_ WEFT_GUARDED_BY(mu_);
};

// Bucket bounds for durations in seconds: 50 µs to about 100 s, a factor of 2.5 apart.
const std::vector<double>& LatencyBuckets();

// Adds to weft_sent_bytes_total and weft_received_bytes_total of `peer` (a task name): what this
// process sent to and received from it, over any transport (tensors and collectives).
void RecordPeerBytes(const std::string& peer, int64_t sent, int64_t received);

// The process's families. Each is made once, where it is recorded (a function-local static
// holding the pointer), and asking again for a name gives the same family.
class Registry {
 public:
  static Registry& Global();

  CounterFamily* FindOrAddCounter(const std::string& name, const std::string& help,
                                  std::vector<std::string> label_names = {});
  HistogramFamily* FindOrAddHistogram(const std::string& name, const std::string& help,
                                      std::vector<std::string> label_names = {},
                                      std::vector<double> bounds = LatencyBuckets());
  // Every family in the Prometheus text exposition format (version 0.0.4), sorted by name.
  std::string ExportText() const;

 private:
  mutable Mutex mu_;
  std::map<std::string, std::unique_ptr<Family>> families_ WEFT_GUARDED_BY(mu_);
};

}  // namespace weft::metrics

// Reading a Chrome trace back in tests: ParseTrace checks that text is trace-event JSON as
// Timeline writes it (metadata names every process and thread that has events, complete events
// have microsecond ts/dur and never overlap within a thread, each flow has one start and one end
// bound to enclosing slices) and indexes it for assertions. For tests only.
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace weft::testing {

struct ParsedTrace {
  nlohmann::json json;
  std::map<int, std::string> process_names;                 // pid -> task (or "steps")
  std::map<std::pair<int, int>, std::string> thread_names;  // (pid, tid) -> row
  std::vector<nlohmann::json> complete;                     // "X" events, in file order
  // Flow id -> its "s" and "f" events.
  std::map<int64_t, std::pair<nlohmann::json, nlohmann::json>> flows;

  // The complete events whose args name `device` (a full device name).
  std::vector<nlohmann::json> EventsOnDevice(const std::string& device) const {
    std::vector<nlohmann::json> events;
    for (const nlohmann::json& event : complete) {
      if (event["args"].value("device", "") == device) events.push_back(event);
    }
    return events;
  }
  // The task (process name) of a complete event.
  std::string TaskOf(const nlohmann::json& event) const {
    auto it = process_names.find(event["pid"].get<int>());
    return it == process_names.end() ? "" : it->second;
  }
};

inline ParsedTrace ParseTrace(const std::string& text) {
  ParsedTrace trace;
  trace.json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(trace.json.is_discarded()) << "not JSON: " << text.substr(0, 200);
  if (trace.json.is_discarded() || !trace.json.is_object() || !trace.json.contains("traceEvents") ||
      !trace.json["traceEvents"].is_array()) {
    ADD_FAILURE() << "not a trace-event object with a traceEvents array";
    return trace;
  }
  std::map<int64_t, int> flow_starts, flow_ends;
  for (const nlohmann::json& event : trace.json["traceEvents"]) {
    EXPECT_TRUE(event.contains("ph") && event["ph"].is_string()) << event.dump();
    EXPECT_TRUE(event.contains("pid") && event["pid"].is_number_integer()) << event.dump();
    const std::string ph = event.value("ph", "");
    if (ph == "M") {
      const std::string name = event.value("name", "");
      if (name == "process_name") {
        trace.process_names[event["pid"].get<int>()] = event["args"]["name"].get<std::string>();
      } else if (name == "thread_name") {
        trace.thread_names[{event["pid"].get<int>(), event["tid"].get<int>()}] =
            event["args"]["name"].get<std::string>();
      }
    } else if (ph == "X") {
      EXPECT_TRUE(event["ts"].is_number() && event["dur"].is_number()) << event.dump();
      EXPECT_GE(event["ts"].get<double>(), 0) << event.dump();
      EXPECT_GE(event["dur"].get<double>(), 0) << event.dump();
      EXPECT_TRUE(event["name"].is_string()) << event.dump();
      trace.complete.push_back(event);
    } else if (ph == "s" || ph == "f") {
      EXPECT_EQ(event.value("bp", ""), "e") << event.dump();
      const int64_t id = event["id"].get<int64_t>();
      if (ph == "s") {
        ++flow_starts[id];
        trace.flows[id].first = event;
      } else {
        ++flow_ends[id];
        trace.flows[id].second = event;
      }
    } else {
      ADD_FAILURE() << "unexpected phase " << ph << ": " << event.dump();
    }
  }
  for (const auto& [id, flow] : trace.flows) {
    EXPECT_EQ(flow_starts[id], 1) << "flow " << id;
    EXPECT_EQ(flow_ends[id], 1) << "flow " << id;
  }
  // Every row with events is named, under a named process, and its events never overlap.
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> rows;
  for (const nlohmann::json& event : trace.complete) {
    const std::pair<int, int> row = {event["pid"].get<int>(), event["tid"].get<int>()};
    EXPECT_TRUE(trace.process_names.count(row.first)) << event.dump();
    EXPECT_TRUE(trace.thread_names.count(row)) << event.dump();
    rows[row].emplace_back(event["ts"].get<double>(), event["dur"].get<double>());
  }
  for (auto& [row, spans] : rows) {
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i) {
      // 1 ns of slack for the rounding of microsecond fractions.
      EXPECT_GE(spans[i].first + 1e-3, spans[i - 1].first + spans[i - 1].second)
          << "overlapping events in row " << trace.thread_names[row];
    }
  }
  return trace;
}

}  // namespace weft::testing

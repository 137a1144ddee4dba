// Device names: parsing, printing, matching and merging of full and partial device specs.
//
// A full name is "/job:<job>/replica:<r>/task:<t>/device:<TYPE>:<id>". A spec may leave any part
// out ("/device:CPU:1", "/job:worker/task:2", "" matches anything) or give "*" for it
// ("/device:CPU:*", "/job:*"), which is the same as leaving it out. The legacy forms "/cpu:0" and
// "/gpu:1" (any case) mean "/device:CPU:0" and "/device:GPU:1". The types "cpu" and "gpu" are
// upper-cased whatever their case, so "/device:cpu:0" and "/CPU:0" name the same device; other
// types are kept as written. Components may come in any order, each at most once.
//
// Stateless; safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include "weft/core/status.h"
#include "weft/core/statusor.h"

namespace weft {

// A parsed spec; a part whose has_ flag is false is unspecified (matches anything).
struct ParsedDeviceName {
  bool has_job = false;
  std::string job;
  bool has_replica = false;
  int replica = 0;
  bool has_task = false;
  int task = 0;
  bool has_type = false;
  std::string type;  // canonical: "CPU", "GPU", or as written for other types
  bool has_id = false;
  int id = 0;

  friend bool operator==(const ParsedDeviceName& a, const ParsedDeviceName& b);
};

// Parses a full or partial spec. InvalidArgument naming the spec and the part that is wrong.
StatusOr<ParsedDeviceName> ParseDeviceName(std::string_view spec);

// The canonical spelling, omitting unspecified parts: "/job:x/replica:0/task:0/device:CPU:0",
// "/device:CPU:*" for a type without id, "" when nothing is specified.
std::string ParsedNameToString(const ParsedDeviceName& name);

// "CPU"/"GPU" for any spelling of cpu/gpu, else `type` unchanged.
std::string CanonicalDeviceType(std::string_view type);

// Every part is specified.
bool IsFullySpecified(const ParsedDeviceName& name);

// Every part set in `less_specific` is set to the same value in `more_specific`.
bool IsSpecification(const ParsedDeviceName& less_specific, const ParsedDeviceName& more_specific);

// `name` is fully specified and matches `pattern`.
bool IsCompleteSpecification(const ParsedDeviceName& pattern, const ParsedDeviceName& name);

// No part is set to different values in `a` and `b`, so some device could match both.
bool AreCompatible(const ParsedDeviceName& a, const ParsedDeviceName& b);

// Fills the parts `target` leaves unset from `other`. A part set to different values in both is
// InvalidArgument naming both specs, and leaves `target` unchanged; with `allow_soft_placement`
// a type or id conflict instead clears the type and id of `target` (job/replica/task conflicts
// stay errors).
Status MergeDevNames(ParsedDeviceName* target, const ParsedDeviceName& other,
                     bool allow_soft_placement = false);

// "/job:<job>/replica:<replica>/task:<task>/device:<type>:<id>" (type canonicalised).
std::string FullName(std::string_view job, int replica, int task, std::string_view type, int id);

// Completes a full or partial spec from `basename` (a full or partial spec, typically the
// worker's "/job:x/replica:0/task:0" or a full device name): parts set in `fullname_or_partial`
// win, the rest come from `basename`; the result is canonical. InvalidArgument when either does
// not parse.
StatusOr<std::string> CanonicalizeDeviceName(std::string_view fullname_or_partial,
                                             std::string_view basename);

}  // namespace weft

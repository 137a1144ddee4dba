// Rendezvous keys (CreateKey/ParseKey), ParsedKey copying, and the blocking Recv built on
// RecvAsync. Key format:
//   "<src_device>;<src_incarnation>;<dst_device>;<tensor_name>;<frame_id>:<iter_id>"
// src_incarnation is exactly 16 lower-case hex digits, zero-padded; frame_id and iter_id are
// non-negative decimal integers (so frame 0, iteration 0 is "0:0"). Both devices must be full
// device names ("/job:<job>/replica:<r>/task:<t>/device:<TYPE>:<id>") and the tensor name must be
// non-empty. CreateKey and ParseKey are exact inverses, so a key is byte-identical whoever builds
// it (the Send/Recv kernels, a session's feeds and fetches, a worker serving RecvTensor).
#include "weft/framework/rendezvous.h"

#include <array>
#include <charconv>
#include <chrono>
#include <functional>
#include <memory>

#include "weft/core/notification.h"
#include "weft/framework/cancellation.h"

namespace weft {
namespace {

constexpr int kIncarnationDigits = 16;

bool IsDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Strips `prefix` from `*s`; false when `*s` does not start with it.
bool ConsumePrefix(std::string_view* s, std::string_view prefix) {
  if (!s->starts_with(prefix)) return false;
  s->remove_prefix(prefix.size());
  return true;
}

// Takes the text up to the next '/' (or the end) from `*s`.
std::string_view ConsumeSegment(std::string_view* s) {
  size_t end = s->find('/');
  if (end == std::string_view::npos) end = s->size();
  std::string_view segment = s->substr(0, end);
  s->remove_prefix(end);
  return segment;
}

// "/job:<job>/replica:<digits>/task:<digits>/device:<TYPE>:<digits>", every part non-empty.
bool IsFullDeviceName(std::string_view name) {
  if (!ConsumePrefix(&name, "/job:") || ConsumeSegment(&name).empty()) return false;
  if (!ConsumePrefix(&name, "/replica:") || !IsDigits(ConsumeSegment(&name))) return false;
  if (!ConsumePrefix(&name, "/task:") || !IsDigits(ConsumeSegment(&name))) return false;
  if (!ConsumePrefix(&name, "/device:")) return false;
  std::string_view device = ConsumeSegment(&name);
  if (!name.empty()) return false;
  size_t colon = device.rfind(':');
  return colon != std::string_view::npos && colon > 0 && IsDigits(device.substr(colon + 1));
}

bool ParseHexIncarnation(std::string_view s, uint64_t* value) {
  if (s.size() != kIncarnationDigits) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), *value, 16);
  return error == std::errc() && end == s.data() + s.size();
}

bool ParseDecimal(std::string_view s, int64_t* value) {
  if (!IsDigits(s)) return false;
  auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), *value);
  return error == std::errc() && end == s.data() + s.size();
}

// "<frame_id>:<iter_id>", both non-negative decimal.
bool ParseFrameIter(std::string_view s, FrameAndIter* frame_iter) {
  size_t colon = s.find(':');
  if (colon == std::string_view::npos) return false;
  return ParseDecimal(s.substr(0, colon), &frame_iter->frame_id) &&
         ParseDecimal(s.substr(colon + 1), &frame_iter->iter_id);
}

// `view` pointed into `from`; returns the same range of `to` (a copy of `from`). A view that does
// not point into `from` (an empty default) is returned unchanged.
std::string_view Rebase(std::string_view view, const std::string& from, const std::string& to) {
  std::less_equal<const char*> le;
  const char* begin = from.data();
  if (view.data() == nullptr || !le(begin, view.data()) ||
      !le(view.data() + view.size(), begin + from.size())) {
    return view;
  }
  return std::string_view(to.data() + (view.data() - begin), view.size());
}

Status InvalidKey(std::string_view key, std::string_view problem) {
  return InvalidArgument("invalid rendezvous key '", key, "': ", problem);
}

}  // namespace

Rendezvous::ParsedKey& Rendezvous::ParsedKey::operator=(const ParsedKey& other) {
  if (this == &other) return *this;
  full_key = other.full_key;
  src_device = Rebase(other.src_device, other.full_key, full_key);
  src_incarnation = other.src_incarnation;
  dst_device = Rebase(other.dst_device, other.full_key, full_key);
  edge_name = Rebase(other.edge_name, other.full_key, full_key);
  frame_iter = other.frame_iter;
  return *this;
}

std::string Rendezvous::CreateKey(std::string_view src_device, uint64_t src_incarnation,
                                  std::string_view dst_device, std::string_view name,
                                  const FrameAndIter& frame_iter) {
  std::array<char, kIncarnationDigits> hex;
  for (int i = kIncarnationDigits - 1; i >= 0; --i) {
    hex[i] = "0123456789abcdef"[src_incarnation & 0xf];
    src_incarnation >>= 4;
  }
  return StrCat(src_device, ";", std::string_view(hex.data(), hex.size()), ";", dst_device, ";",
                name, ";", frame_iter.frame_id, ":", frame_iter.iter_id);
}

StatusOr<Rendezvous::ParsedKey> Rendezvous::ParseKey(std::string_view key) {
  std::array<std::string_view, 5> parts;
  size_t count = 0;
  size_t start = 0;
  while (true) {
    size_t end = key.find(';', start);
    std::string_view part =
        key.substr(start, end == std::string_view::npos ? key.npos : end - start);
    if (count < parts.size()) parts[count] = part;
    ++count;
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  if (count != parts.size()) {
    return InvalidKey(key, StrCat("has ", count,
                                  " ';'-separated parts, expected 5 (src_device;"
                                  "src_incarnation;dst_device;tensor_name;frame:iter)"));
  }
  if (!IsFullDeviceName(parts[0])) {
    return InvalidKey(key, StrCat("source device '", parts[0], "' is not a full device name"));
  }
  ParsedKey parsed;
  if (!ParseHexIncarnation(parts[1], &parsed.src_incarnation)) {
    return InvalidKey(
        key, StrCat("source incarnation '", parts[1], "' is not 16 lower-case hex digits"));
  }
  if (!IsFullDeviceName(parts[2])) {
    return InvalidKey(key, StrCat("destination device '", parts[2], "' is not a full device name"));
  }
  if (parts[3].empty()) return InvalidKey(key, "tensor name is empty");
  if (!ParseFrameIter(parts[4], &parsed.frame_iter)) {
    return InvalidKey(
        key, StrCat("frame '", parts[4], "' is not <frame_id>:<iter_id> in non-negative decimal"));
  }
  parsed.full_key = std::string(key);
  const char* base = key.data();
  auto view = [&](std::string_view part) {
    return std::string_view(parsed.full_key.data() + (part.data() - base), part.size());
  };
  parsed.src_device = view(parts[0]);
  parsed.dst_device = view(parts[2]);
  parsed.edge_name = view(parts[3]);
  return parsed;
}

Status Rendezvous::Recv(const ParsedKey& key, const Args& recv_args, Tensor* value, bool* is_dead,
                        int64_t timeout_ms) {
  // Shared with the callback, which may run after a timed-out Recv has returned.
  struct State {
    // Cancelled on timeout so that the rendezvous forgets the waiter (a later Send is then kept
    // for another Recv instead of being handed to this abandoned one).
    CancellationManager cancellation;
    Notification done;
    Status status;
    Tensor value;
    bool is_dead = false;
  };
  auto state = std::make_shared<State>();
  auto on_done = [state](const Status& status, const Args&, const Args&, const Tensor& value,
                         bool dead) {
    state->status = status;
    state->value = value;
    state->is_dead = dead;
    state->done.Notify();
  };
  auto finish = [&]() -> Status {
    if (!state->status.ok()) return state->status;
    *value = state->value;
    *is_dead = state->is_dead;
    return Status::OK();
  };

  if (timeout_ms <= 0) {
    RecvAsync(key, recv_args, std::move(on_done));
    state->done.WaitForNotification();
    return finish();
  }

  // Wait on the private cancellation, linked to the caller's so a step cancellation still wakes us.
  CancellationManager* outer = recv_args.cancellation_manager;
  CancellationManager::Token outer_token = 0;
  if (outer != nullptr) {
    outer_token = outer->NewToken();
    if (!outer->RegisterCallback(outer_token, [state] { state->cancellation.StartCancel(); })) {
      state->cancellation.StartCancel();
    }
  }
  Args args = recv_args;
  args.cancellation_manager = &state->cancellation;
  RecvAsync(key, args, std::move(on_done));
  bool arrived = state->done.WaitForNotificationWithTimeout(std::chrono::milliseconds(timeout_ms));
  if (!arrived) {
    state->cancellation.StartCancel();
    // The value may have won the race against the cancellation.
    arrived = state->done.HasBeenNotified() && state->status.ok();
  }
  if (outer != nullptr) outer->DeregisterCallback(outer_token);
  if (!arrived) {
    return DeadlineExceeded("timed out after ", timeout_ms, " ms waiting for rendezvous key '",
                            key.full_key, "'");
  }
  return finish();
}

}  // namespace weft

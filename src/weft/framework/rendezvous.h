// Rendezvous: where a _Send and its _Recv meet. A key names one tensor crossing from one device to
// another in one step:
//   "<src_device>;<src_incarnation as 16 hex digits>;<dst_device>;<tensor_name>;<frame_id>:<iter>"
// (frame_id and iter are 0 until Weft has control-flow frames). Send never blocks; RecvAsync calls
// back once the value is there (or the rendezvous is aborted). A Rendezvous serves one step: the
// runtime makes one per step, so two concurrent steps never see each other's tensors.
// Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "weft/core/status.h"
#include "weft/core/tensor.h"

namespace weft {

class CancellationManager;
class DeviceBase;

struct FrameAndIter {
  int64_t frame_id = 0;
  int64_t iter_id = 0;
};

class Rendezvous {
 public:
  // What each side tells the other: the device it runs on and the step's cancellation.
  struct Args {
    DeviceBase* device = nullptr;
    CancellationManager* cancellation_manager = nullptr;
  };

  // A key split into its parts; the views point into `full_key`, which the struct owns.
  struct ParsedKey {
    std::string full_key;
    std::string_view src_device;
    uint64_t src_incarnation = 0;
    std::string_view dst_device;
    std::string_view edge_name;
    FrameAndIter frame_iter;

    ParsedKey() = default;
    ParsedKey(const ParsedKey& other) { *this = other; }
    ParsedKey& operator=(const ParsedKey& other);
  };

  static std::string CreateKey(std::string_view src_device, uint64_t src_incarnation,
                               std::string_view dst_device, std::string_view name,
                               const FrameAndIter& frame_iter);
  // InvalidArgument naming the key when it does not have the five parts above.
  static StatusOr<ParsedKey> ParseKey(std::string_view key);

  // Called once with the value (or the error that ended the wait). `is_dead` is reserved for
  // control flow and false today.
  using DoneCallback =
      std::function<void(const Status& status, const Args& send_args, const Args& recv_args,
                         const Tensor& value, bool is_dead)>;

  virtual ~Rendezvous() = default;

  // Hands `value` over without copying; never blocks. A second Send of one key in a step is an
  // error naming the key; after StartAbort, returns the abort status.
  virtual Status Send(const ParsedKey& key, const Args& send_args, const Tensor& value,
                      bool is_dead) = 0;
  // Calls `done` when the key's value arrives, at once when it is already there, or with the
  // abort status. If the step's cancellation (recv_args.cancellation_manager) starts first, calls
  // `done` with Cancelled naming the key.
  virtual void RecvAsync(const ParsedKey& key, const Args& recv_args, DoneCallback done) = 0;
  // Fails every pending and future Send/Recv with `status` (which must not be OK).
  virtual void StartAbort(const Status& status) = 0;

  // Blocking Recv for tests and simple callers: waits up to `timeout_ms` (0: forever).
  Status Recv(const ParsedKey& key, const Args& recv_args, Tensor* value, bool* is_dead,
              int64_t timeout_ms = 0);
};

}  // namespace weft

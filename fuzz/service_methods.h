// The methods of the service fuzzers' call records (service_fuzz_util.h): the first byte of a
// record, modulo kCount, picks one. Shared by the fuzzers and make_seed_corpus, so that seeds and
// targets agree.
#pragma once

#include <cstdint>

namespace weft::fuzz {

enum class WorkerMethod : uint8_t {
  kGetStatus,
  kCreateWorkerSession,
  kDeleteWorkerSession,
  kRegisterGraph,
  kDeregisterGraph,
  kRunGraph,
  kCleanupGraph,
  kRecvTensor,
  kCompleteGroup,
  kCount,
};

enum class MasterMethod : uint8_t {
  kCreateSession,
  kExtendSession,
  kRunStep,
  kCloseSession,
  kListDevices,
  kReset,
  kCount,
};

// The method a record's first byte picks.
template <typename Method>
Method PickMethod(uint8_t byte) {
  return static_cast<Method>(byte % static_cast<uint8_t>(Method::kCount));
}

}  // namespace weft::fuzz

// libFuzzer target: DatasetDef decoding (data::Dataset::FromDef), which a worker runs on the
// `dataset` attr of a MakeIterator node that came over the wire in a graph.
#include <cstdint>

#include "weft/core/logging.h"
#include "weft/data/dataset.h"
#include "weft/dataset.pb.h"

namespace {

// Whether `def` reads a file when it is built (FromIdxFiles reads its files at once): such inputs
// are skipped, so the fuzzer never reads whatever paths it invents.
bool ReadsFilesWhenBuilt(const weft::proto::DatasetDef& def) {
  using Kind = weft::proto::DatasetDef::KindCase;
  switch (def.kind_case()) {
    case Kind::kIdxFiles:
      return true;
    case Kind::kShuffle:
      return ReadsFilesWhenBuilt(def.shuffle().input());
    case Kind::kBatch:
      return ReadsFilesWhenBuilt(def.batch().input());
    case Kind::kRepeat:
      return ReadsFilesWhenBuilt(def.repeat().input());
    case Kind::kPrefetch:
      return ReadsFilesWhenBuilt(def.prefetch().input());
    case Kind::kShard:
      return ReadsFilesWhenBuilt(def.shard().input());
    case Kind::kTake:
      return ReadsFilesWhenBuilt(def.take().input());
    default:
      return false;
  }
}

}  // namespace

// Input: a serialized DatasetDef. Building never crashes; a dataset it builds describes itself,
// and that description builds again into one with the same description. Iterating is left out:
// a well-formed def may describe an endless pipeline (a Repeat without end into a huge Batch).
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  weft::proto::DatasetDef def;
  if (!def.ParseFromArray(data, static_cast<int>(size))) return 0;
  if (ReadsFilesWhenBuilt(def)) return 0;
  const weft::data::Dataset dataset = weft::data::Dataset::FromDef(def);
  if (!dataset.status().ok()) return 0;
  weft::StatusOr<weft::proto::DatasetDef> described = dataset.ToDef();
  WEFT_CHECK(described.ok()) << "a dataset built from a def has no description: "
                             << described.status();
  const weft::data::Dataset again = weft::data::Dataset::FromDef(*described);
  WEFT_CHECK(again.status().ok()) << "a dataset's own description does not build: "
                                  << again.status();
  WEFT_CHECK(again.ToDef().value().SerializeAsString() == described->SerializeAsString())
      << "the description changed on a round trip";
  return 0;
}

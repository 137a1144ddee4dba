// libFuzzer target: the reading side of checkpoints (index, manifest, safetensors shard, and a
// whole checkpoint restored by the RestoreV2 kernel), whose files a restore must never trust.
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_util.h"

#include "weft/checkpoint/checkpoint_index.h"
#include "weft/core/logging.h"
#include "weft/framework/attr_value_util.h"
#include "weft/graph/builder/ops/io_ops.h"
#include "weft/io/checkpoint_manifest.h"
#include "weft/io/safetensors.h"
#include "weft/testing/kernel_runner.h"

namespace weft::fuzz {
namespace {

constexpr char kShard[] = "shard-00000-of-00001.safetensors";
// RestoreV2 is asked for at most this many of the manifest's tensors, to keep one input cheap.
constexpr size_t kMaxRestoredTensors = 16;

// <scratch>/index holds checkpoint.json and the checkpoints the seeds name; <scratch>/ckpt one
// checkpoint's files.
std::string Directory(const std::string& name) {
  const std::string path = io::JoinPath(ScratchDir::Path(), name);
  WEFT_CHECK(io::CreateDirectories(path).ok()) << path;
  return path;
}

void ReadIndex(std::string_view bytes) {
  static const std::string directory = [] {
    const std::string made = Directory("index");
    Directory("index/ckpt-100");
    Directory("index/ckpt-200");
    return made;
  }();
  ScratchDir::Write(io::JoinPath("index", checkpoint::kCheckpointIndexName), bytes);
  checkpoint::ReadCheckpointIndex(directory).status().IgnoreError();
}

void ReadManifest(std::string_view bytes) {
  StatusOr<io::CheckpointManifest> manifest =
      io::CheckpointManifest::FromJson(std::string(bytes), "manifest.json");
  if (!manifest.ok()) return;
  // What a manifest reads as must write (and read back) the same.
  StatusOr<io::CheckpointManifest> again =
      io::CheckpointManifest::FromJson(manifest->ToJson(), "manifest.json");
  WEFT_CHECK(again.ok()) << "a manifest's own JSON does not parse: " << again.status();
  WEFT_CHECK(again->tensors.size() == manifest->tensors.size() &&
             again->shards.size() == manifest->shards.size() && again->step == manifest->step);
}

void ReadShard(std::string_view bytes) {
  StatusOr<std::unique_ptr<io::SafetensorsReader>> reader =
      io::SafetensorsReader::Open(ScratchDir::Write(kShard, bytes));
  if (!reader.ok()) return;
  for (const io::SafetensorsEntry& entry : (*reader)->tensors()) {
    StatusOr<Tensor> tensor = (*reader)->Read(entry.name);
    WEFT_CHECK(!tensor.ok() || tensor->shape() == entry.shape);
  }
}

void Restore(std::string_view manifest_bytes, std::string_view shard_bytes) {
  static const std::string directory = Directory("ckpt");
  ScratchDir::Write(io::JoinPath("ckpt", io::kCheckpointManifestName), manifest_bytes);
  ScratchDir::Write(io::JoinPath("ckpt", kShard), shard_bytes);
  // RestoreV2 reads what the model asks for; the harness asks for what the manifest lists, so
  // that the kernel gets as far as the shard.
  StatusOr<io::CheckpointManifest> manifest = io::CheckpointManifest::Read(directory);
  if (!manifest.ok()) return;
  std::vector<std::string> names;
  std::vector<DataType> dtypes;
  std::vector<TensorShape> shapes;
  for (const auto& [name, tensor] : manifest->tensors) {
    if (names.size() == kMaxRestoredTensors) break;
    names.push_back(name);
    dtypes.push_back(tensor.dtype);
    shapes.push_back(tensor.shape);
  }
  if (names.empty()) return;
  static testing::KernelRunner* runner = new testing::KernelRunner(/*intra_op_threads=*/2);
  runner
      ->Run("RestoreV2", {ops::PathTensor(directory)},
            {{"tensor_names", MakeAttrValue(names)},
             {"dtypes", MakeAttrValue(dtypes)},
             {"shapes", MakeAttrValue(shapes)}})
      .status()
      .IgnoreError();
}

}  // namespace
}  // namespace weft::fuzz

// Input: one mode byte (0: checkpoint/checkpoint_index.h; 1: io/checkpoint_manifest.h; 2:
// io/safetensors.h; 3: a whole checkpoint through RestoreV2, which cross-checks the manifest
// against the shard), then the file; for a whole checkpoint a little-endian uint16 manifest
// length, the manifest and the shard bytes. The files go to a scratch directory, since every
// reader takes a path.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  weft::fuzz::InputReader input(data, size);
  switch (input.TakeByte() % 4) {
    case 0:
      weft::fuzz::ReadIndex(input.TakeRest());
      break;
    case 1:
      weft::fuzz::ReadManifest(input.TakeRest());
      break;
    case 2:
      weft::fuzz::ReadShard(input.TakeRest());
      break;
    default: {
      const std::string_view manifest = input.TakeBytes(input.TakeU16());
      weft::fuzz::Restore(manifest, input.TakeRest());
    }
  }
  return 0;
}

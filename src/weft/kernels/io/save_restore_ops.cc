// SaveV2 and RestoreV2 kernels: the bytes of a checkpoint go between the variables' device and
// the file system here, through weft::io's safetensors reader and writer, without any copy on the
// way out. Neither touches shared state beyond the files, so concurrent steps may run them.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "weft/framework/node_def_util.h"
#include "weft/framework/op_kernel.h"
#include "weft/io/checkpoint_manifest.h"
#include "weft/io/durable_file.h"
#include "weft/io/safetensors.h"
#include "weft/kernels/register_kernels.h"

namespace weft::kernels {
namespace {

// The path a uint8 vector holds; InvalidArgument naming the node otherwise.
StatusOr<std::string> PathInput(const OpKernel& kernel, const Tensor& bytes) {
  if (bytes.dtype() != DataType::kUInt8 || bytes.dims() != 1 || bytes.NumElements() == 0) {
    return InvalidArgument(FormatNodeForError(kernel.def()),
                           ": the directory must be a non-empty uint8 vector of path bytes, got ",
                           DataTypeName(bytes.dtype()), " ", bytes.shape());
  }
  return std::string(static_cast<const char*>(bytes.raw_data()),
                     static_cast<size_t>(bytes.NumElements()));
}

class SaveV2Op final : public OpKernel {
 public:
  explicit SaveV2Op(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(context->GetAttr("tensor_names", &tensor_names_));
    context->SetStatus(context->GetAttr("shard_file", &shard_file_));
    std::vector<DataType> dtypes;
    context->SetStatus(context->GetAttr("dtypes", &dtypes));
    if (dtypes.size() != tensor_names_.size()) {
      context->SetStatus(InvalidArgument(FormatNodeForError(def()), ": ", tensor_names_.size(),
                                         " tensor names for ", dtypes.size(), " tensors"));
    }
    if (shard_file_.empty() || shard_file_.find('/') != std::string::npos || shard_file_ == "." ||
        shard_file_ == "..") {
      context->SetStatus(InvalidArgument(FormatNodeForError(def()), ": shard_file '", shard_file_,
                                         "' must be a plain file name"));
    }
  }

  Status Compute(OpKernelContext* context) override {
    WEFT_ASSIGN_OR_RETURN(std::string directory, PathInput(*this, context->input(0)));
    std::vector<std::pair<std::string, Tensor>> tensors;
    tensors.reserve(tensor_names_.size());
    for (size_t i = 0; i < tensor_names_.size(); ++i) {
      tensors.emplace_back(tensor_names_[i], context->input(static_cast<int>(i) + 1));
    }
    StatusOr<io::SafetensorsFileInfo> written =
        io::WriteSafetensorsFile(io::JoinPath(directory, shard_file_), tensors);
    if (!written.ok()) return written.status().WithContext(FormatNodeForError(def()));
    return Status::OK();
  }

 private:
  std::vector<std::string> tensor_names_;
  std::string shard_file_;
};

class RestoreV2Op final : public OpKernel {
 public:
  explicit RestoreV2Op(OpKernelConstruction* context) : OpKernel(context) {
    context->SetStatus(context->GetAttr("tensor_names", &tensor_names_));
    context->SetStatus(context->GetAttr("dtypes", &dtypes_));
    context->SetStatus(context->GetAttr("shapes", &shapes_));
    if (dtypes_.size() != tensor_names_.size() || shapes_.size() != tensor_names_.size()) {
      context->SetStatus(InvalidArgument(FormatNodeForError(def()), ": ", tensor_names_.size(),
                                         " tensor names, ", dtypes_.size(), " dtypes and ",
                                         shapes_.size(), " shapes"));
    }
  }

  Status Compute(OpKernelContext* context) override {
    WEFT_ASSIGN_OR_RETURN(std::string directory, PathInput(*this, context->input(0)));
    Status status = Restore(directory, context);
    return status.ok() ? status : status.WithContext(FormatNodeForError(def()));
  }

 private:
  Status Restore(const std::string& directory, OpKernelContext* context) const {
    WEFT_ASSIGN_OR_RETURN(io::CheckpointManifest manifest, io::CheckpointManifest::Read(directory));
    std::map<std::string, uint64_t> shard_bytes;
    for (const io::ManifestShard& shard : manifest.shards) shard_bytes[shard.file] = shard.bytes;
    // Each shard is opened once, and only when a wanted tensor lives there.
    std::map<std::string, std::unique_ptr<io::SafetensorsReader>> readers;
    for (size_t i = 0; i < tensor_names_.size(); ++i) {
      const std::string& name = tensor_names_[i];
      auto found = manifest.tensors.find(name);
      if (found == manifest.tensors.end()) {
        return NotFound("checkpoint ", directory, " has no tensor '", name,
                        "' (the model has a variable of that name; was it saved from another "
                        "model?)");
      }
      const io::ManifestTensor& saved = found->second;
      const std::string path = io::JoinPath(directory, saved.shard);
      if (saved.dtype != dtypes_[i]) {
        return InvalidArgument("tensor '", name, "' in ", path, " is ", DataTypeName(saved.dtype),
                               " but the model's variable is ", DataTypeName(dtypes_[i]));
      }
      if (saved.shape != shapes_[i]) {
        return InvalidArgument("tensor '", name, "' in ", path, " has shape ",
                               saved.shape.DebugString(), " but the model's variable has shape ",
                               shapes_[i].DebugString());
      }
      std::unique_ptr<io::SafetensorsReader>& reader = readers[saved.shard];
      if (reader == nullptr) {
        WEFT_ASSIGN_OR_RETURN(reader, io::SafetensorsReader::Open(path));
        if (reader->file_bytes() != shard_bytes[saved.shard]) {
          return DataLoss("file ", path, " has ", reader->file_bytes(),
                          " bytes but the manifest says ", shard_bytes[saved.shard],
                          " (truncated or overwritten)");
        }
      }
      const io::SafetensorsEntry* entry = reader->Find(name);
      if (entry == nullptr) {
        return DataLoss("the manifest of ", directory, " puts tensor '", name, "' in ", path,
                        ", which does not hold it");
      }
      if (entry->dtype != saved.dtype || entry->shape != saved.shape || !entry->has_crc32c ||
          entry->crc32c != saved.crc32c) {
        return DataLoss("tensor '", name, "' in ", path,
                        " differs from the manifest (dtype, shape or CRC32C)");
      }
      Tensor value(saved.dtype, saved.shape);
      WEFT_RETURN_IF_ERROR(reader->ReadInto(*entry, &value));
      WEFT_RETURN_IF_ERROR(context->SetOutput(static_cast<int>(i), std::move(value)));
    }
    return Status::OK();
  }

  std::vector<std::string> tensor_names_;
  std::vector<DataType> dtypes_;
  std::vector<TensorShape> shapes_;
};

}  // namespace

void RegisterIoKernels(KernelRegistry& registry) {
  registry.Register<SaveV2Op>(KernelDef("SaveV2", "CPU"));
  registry.Register<RestoreV2Op>(KernelDef("RestoreV2", "CPU"));
}

}  // namespace weft::kernels

// SaveV2 and RestoreV2 kernels: the bytes of a checkpoint go between the variables' device and
// the file system here, through weft::io's safetensors reader and writer, without any copy on the
// way out. Both are asynchronous: their file I/O runs on threads of its own (CheckpointIoThreads),
// never on the executor's, so a save written beside training (an asynchronous checkpoint) does not
// hold up the training steps' nodes queued on the same inter-op threads. Neither touches shared
// state beyond the files, so concurrent steps may run them.
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <sched.h>

#include "weft/core/thread_pool.h"
#include "weft/framework/device_base.h"
#include "weft/framework/node_def_util.h"
#include "weft/framework/op_kernel.h"
#include "weft/io/checkpoint_manifest.h"
#include "weft/io/checkpoint_row_copies.h"
#include "weft/io/durable_file.h"
#include "weft/io/safetensors.h"
#include "weft/kernels/register_kernels.h"

namespace weft::kernels {
namespace {

// Where checkpoint file I/O runs: two threads that sleep when idle, made on first use and kept
// for the process's life (kernels of any session may use them until exit).
ThreadPool& CheckpointIoThreads() {
  static ThreadPool* const pool = new ThreadPool("checkpoint_io", 2);
  return *pool;
}

// Runs `fn` on a checkpoint I/O thread. `background` (a save written beside training) runs at
// idle priority (SCHED_IDLE): it gets the cores only when nothing else wants them, so it takes the
// gaps between the training step's kernels instead of slowing them down. Everything else (a save
// or restore the caller waits for) runs at normal priority, or a busy machine would starve it.
void RunOnIoThread(bool background, std::function<void()> fn) {
  CheckpointIoThreads().Schedule([background, fn = std::move(fn)] {
    // A failure to change the priority only costs some speed: the work still runs.
    sched_param param{};
    (void)sched_setscheduler(0, background ? SCHED_IDLE : SCHED_OTHER, &param);
    fn();
  });
}

// A background save writes this much at a time, then pauses (measured with W2 saving in the
// background on 2 cores: written in one go, its 26 MB slowed the next training step by 5-25 ms,
// SCHED_IDLE notwithstanding, since the kernel's page-cache work competes with the step).
constexpr size_t kBackgroundPieceBytes = 256 << 10;
constexpr std::chrono::microseconds kBackgroundPause(1000);

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

// What SaveV2 and RestoreV2 share: the tensor names and dtypes attrs, and the directory input
// parsed before the file I/O starts.
class CheckpointOpKernel : public AsyncOpKernel {
 public:
  explicit CheckpointOpKernel(OpKernelConstruction* context) : AsyncOpKernel(context) {
    context->SetStatus(context->GetAttr("tensor_names", &tensor_names_));
    context->SetStatus(context->GetAttr("dtypes", &dtypes_));
    if (dtypes_.size() != tensor_names_.size()) {
      context->SetStatus(InvalidArgument(FormatNodeForError(def()), ": ", tensor_names_.size(),
                                         " tensor names for ", dtypes_.size(), " dtypes"));
    }
  }

  void ComputeAsync(OpKernelContext* context, DoneCallback done) final {
    StatusOr<std::string> directory = PathInput(*this, context->input(0));
    if (!directory.ok()) {
      context->SetStatus(directory.status());
      done();
      return;
    }
    StartIo(context, std::move(directory).value(), std::move(done));
  }

 protected:
  // Starts the file I/O in `directory` on a checkpoint I/O thread; calls `done` there.
  virtual void StartIo(OpKernelContext* context, std::string directory, DoneCallback done) = 0;

  std::vector<std::string> tensor_names_;
  std::vector<DataType> dtypes_;
};

class SaveV2Op final : public CheckpointOpKernel {
 public:
  explicit SaveV2Op(OpKernelConstruction* context) : CheckpointOpKernel(context) {
    context->SetStatus(context->GetAttr("shard_file", &shard_file_));
    context->SetStatus(context->GetAttr("background", &background_));
    if (shard_file_.empty() || shard_file_.find('/') != std::string::npos || shard_file_ == "." ||
        shard_file_ == "..") {
      context->SetStatus(InvalidArgument(FormatNodeForError(def()), ": shard_file '", shard_file_,
                                         "' must be a plain file name"));
    }
  }

  void StartIo(OpKernelContext* context, std::string directory, DoneCallback done) override {
    std::vector<std::pair<std::string, Tensor>> tensors;
    tensors.reserve(tensor_names_.size());
    for (size_t i = 0; i < tensor_names_.size(); ++i) {
      tensors.emplace_back(tensor_names_[i], context->input(static_cast<int>(i) + 1));
    }
    RunOnIoThread(background_, [this, context, path = io::JoinPath(directory, shard_file_),
                                tensors = std::move(tensors), done = std::move(done)] {
      io::SafetensorsWriteOptions options;
      if (background_) {
        // About a quarter of one core: a piece's copy into the page cache takes ~0.3 ms here.
        options.piece_bytes = kBackgroundPieceBytes;
        options.between_pieces = [] { std::this_thread::sleep_for(kBackgroundPause); };
      }
      StatusOr<io::SafetensorsFileInfo> written =
          io::WriteSafetensorsFile(path, tensors, {}, options);
      if (!written.ok())
        context->SetStatus(written.status().WithContext(FormatNodeForError(def())));
      done();
    });
  }

 private:
  std::string shard_file_;
  bool background_ = false;
};

class RestoreV2Op final : public CheckpointOpKernel {
 public:
  explicit RestoreV2Op(OpKernelConstruction* context) : CheckpointOpKernel(context) {
    std::vector<TensorShape> shapes;
    std::vector<std::string> whole_names;
    std::vector<int64_t> whole_rows, offsets;
    context->SetStatus(context->GetAttr("shapes", &shapes));
    context->SetStatus(context->GetAttr("whole_names", &whole_names));
    context->SetStatus(context->GetAttr("whole_rows", &whole_rows));
    context->SetStatus(context->GetAttr("offsets", &offsets));
    const size_t n = tensor_names_.size();
    if (shapes.size() != n) {
      context->SetStatus(InvalidArgument(FormatNodeForError(def()), ": ", n, " tensor names for ",
                                         shapes.size(), " shapes"));
      return;
    }
    const bool has_parts = !whole_names.empty() || !whole_rows.empty() || !offsets.empty();
    if (has_parts && (whole_names.size() != n || whole_rows.size() != n || offsets.size() != n)) {
      context->SetStatus(InvalidArgument(FormatNodeForError(def()), ": ", n, " tensor names for ",
                                         whole_names.size(), " whole names, ", whole_rows.size(),
                                         " whole row counts and ", offsets.size(), " offsets"));
      return;
    }
    for (size_t i = 0; i < n; ++i) {
      io::RestoreTarget target;
      target.name = tensor_names_[i];
      target.dtype = dtypes_[i];
      target.shape = shapes[i];
      if (has_parts) {
        target.whole_name = whole_names[i];
        target.whole_rows = whole_rows[i];
        target.offset = offsets[i];
      }
      targets_.push_back(std::move(target));
    }
  }

  void StartIo(OpKernelContext* context, std::string directory, DoneCallback done) override {
    RunOnIoThread(
        /*background=*/false,
        [this, context, directory = std::move(directory), done = std::move(done)] {
          Status status = Restore(directory, context);
          if (!status.ok()) context->SetStatus(status.WithContext(FormatNodeForError(def())));
          done();
        });
  }

 private:
  // One saved tensor read whole from its shard (CRC checked).
  struct PendingRead {
    const io::SafetensorsReader* reader;
    const io::SafetensorsEntry* entry;
    Tensor value;
    Status status;
  };

  // The shards of one checkpoint, each opened once, and only when a wanted tensor lives there;
  // every file's size and every entry checked against the manifest.
  class Shards {
   public:
    Shards(const std::string& directory, const io::CheckpointManifest& manifest)
        : directory_(directory), manifest_(manifest) {}

    StatusOr<PendingRead> Prepare(const std::string& name) {
      const io::ManifestTensor& saved = manifest_.tensors.at(name);
      const std::string path = io::JoinPath(directory_, saved.shard);
      std::unique_ptr<io::SafetensorsReader>& reader = readers_[saved.shard];
      if (reader == nullptr) {
        WEFT_ASSIGN_OR_RETURN(reader, io::SafetensorsReader::Open(path));
        uint64_t bytes = 0;
        for (const io::ManifestShard& shard : manifest_.shards) {
          if (shard.file == saved.shard) bytes = shard.bytes;
        }
        if (reader->file_bytes() != bytes) {
          return DataLoss("file ", path, " has ", reader->file_bytes(),
                          " bytes but the manifest says ", bytes, " (truncated or overwritten)");
        }
      }
      const io::SafetensorsEntry* entry = reader->Find(name);
      if (entry == nullptr) {
        return DataLoss("the manifest of ", directory_, " puts tensor '", name, "' in ", path,
                        ", which does not hold it");
      }
      if (entry->dtype != saved.dtype || entry->shape != saved.shape || !entry->has_crc32c ||
          entry->crc32c != saved.crc32c) {
        return DataLoss("tensor '", name, "' in ", path,
                        " differs from the manifest (dtype, shape or CRC32C)");
      }
      return PendingRead{reader.get(), entry, Tensor(saved.dtype, saved.shape), Status::OK()};
    }

   private:
    const std::string& directory_;
    const io::CheckpointManifest& manifest_;
    std::map<std::string, std::unique_ptr<io::SafetensorsReader>> readers_;
  };

  Status Restore(const std::string& directory, OpKernelContext* context) const {
    WEFT_ASSIGN_OR_RETURN(io::CheckpointManifest manifest, io::CheckpointManifest::Read(directory));
    Shards shards(directory, manifest);
    std::vector<PendingRead> reads;
    // Each output is one saved tensor read straight into it, or rows copied out of saved tensors
    // (a part of a variable the checkpoint cut another way), each of those read once.
    std::vector<int> whole_read(targets_.size(), -1);
    std::vector<std::vector<io::RowCopy>> row_copies(targets_.size());
    std::map<std::string, int> source_read;
    for (size_t i = 0; i < targets_.size(); ++i) {
      WEFT_ASSIGN_OR_RETURN(std::vector<io::RowCopy> copies,
                            io::FindRowCopies(manifest, directory, targets_[i]));
      if (io::IsWholeTensorCopy(copies, manifest, targets_[i])) {
        whole_read[i] = static_cast<int>(reads.size());
        WEFT_ASSIGN_OR_RETURN(PendingRead read, shards.Prepare(copies[0].tensor));
        reads.push_back(std::move(read));
        continue;
      }
      for (const io::RowCopy& copy : copies) {
        if (source_read.contains(copy.tensor)) continue;
        source_read[copy.tensor] = static_cast<int>(reads.size());
        WEFT_ASSIGN_OR_RETURN(PendingRead read, shards.Prepare(copy.tensor));
        reads.push_back(std::move(read));
      }
      row_copies[i] = std::move(copies);
    }
    // The reads (a copy out of the page cache and a CRC each) run on the intra-op threads too: a
    // restore comes before training, when they are idle.
    auto read = [&reads](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        reads[r].status = reads[r].reader->ReadInto(*reads[r].entry, &reads[r].value);
      }
    };
    ThreadPool* pool = context->device() != nullptr ? context->device()->intra_op_pool() : nullptr;
    if (pool != nullptr) {
      pool->ParallelFor(static_cast<int64_t>(reads.size()), /*cost_per_unit=*/1 << 20, read);
    } else {
      read(0, static_cast<int64_t>(reads.size()));
    }
    for (const PendingRead& done : reads) WEFT_RETURN_IF_ERROR(done.status);
    for (size_t i = 0; i < targets_.size(); ++i) {
      Tensor value = whole_read[i] >= 0 ? reads[whole_read[i]].value
                                        : CopyRows(targets_[i], row_copies[i], reads, source_read);
      WEFT_RETURN_IF_ERROR(context->SetOutput(static_cast<int>(i), std::move(value)));
    }
    return Status::OK();
  }

  // The target's value assembled from rows of the saved tensors `copies` name (all read).
  static Tensor CopyRows(const io::RestoreTarget& target, const std::vector<io::RowCopy>& copies,
                         const std::vector<PendingRead>& reads,
                         const std::map<std::string, int>& source_read) {
    Tensor value(target.dtype, target.shape);
    size_t row_bytes = DataTypeSize(target.dtype);
    for (int d = 1; d < target.shape.dims(); ++d) {
      row_bytes *= static_cast<size_t>(target.shape.dim_size(d));
    }
    char* to = static_cast<char*>(value.raw_data());
    for (const io::RowCopy& copy : copies) {
      const char* from =
          static_cast<const char*>(reads[source_read.at(copy.tensor)].value.raw_data());
      std::memcpy(to + static_cast<size_t>(copy.to_row) * row_bytes,
                  from + static_cast<size_t>(copy.from_row) * row_bytes,
                  static_cast<size_t>(copy.rows) * row_bytes);
    }
    return value;
  }

  std::vector<io::RestoreTarget> targets_;
};

}  // namespace

void RegisterIoKernels(KernelRegistry& registry) {
  registry.Register<SaveV2Op>(KernelDef("SaveV2", "CPU"));
  registry.Register<RestoreV2Op>(KernelDef("RestoreV2", "CPU"));
}

}  // namespace weft::kernels

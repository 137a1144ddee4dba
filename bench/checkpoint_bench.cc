// `bench/run.sh checkpoint`: saving and restoring a 256 MB model (64 float32 variables of
// 1024x1024) through checkpoint::Checkpoint against the floor of the same bytes written with a
// plain write+fsync loop and read back with a plain read loop, in the same directory. Each side
// runs kRepeats times, interleaved; the best run of each counts. Prints METRIC and RATIO lines (a
// RATIO above 1 means Weft is faster). Usage: checkpoint_bench DIR (a scratch directory, emptied).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "weft/checkpoint/checkpoint.h"
#include "weft/core/str_util.h"
#include "weft/graph/builder/ops.h"
#include "weft/io/durable_file.h"
#include "weft/runtime/session.h"

namespace weft {
namespace {

constexpr int kVariables = 64;
constexpr int64_t kRows = 1024;
constexpr int64_t kColumns = 1024;
constexpr int kRepeats = 3;

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void Check(const Status& status, const char* what) {
  if (status.ok()) return;
  std::fprintf(stderr, "checkpoint_bench: %s: %s\n", what, status.ToString().c_str());
  std::exit(1);
}

// The model: its graph, its checkpoint ops, and the names to initialize and read it.
struct BenchModel {
  proto::GraphDef graph;
  std::unique_ptr<checkpoint::Checkpoint> checkpoint;
  std::string init;
  std::vector<std::string> reads;
};

BenchModel BuildBenchModel() {
  BenchModel model;
  Scope root = Scope::NewRootScope();
  checkpoint::CheckpointObjects objects;
  std::vector<Output> initializers;
  for (int i = 0; i < kVariables; ++i) {
    Variable v =
        Variable::Create(root, StrCat("layer", i, "/kernel"), TensorShape({kRows, kColumns}),
                         DataType::kFloat, Initializer::RandomUniform(-1, 1, /*seed=*/i + 1));
    objects.variables.push_back(v);
    initializers.push_back(v.initializer());
    model.reads.push_back(v.Read(root).name());
  }
  model.init = ops::NoOp(root.WithOpName("init").WithControlDependencies(initializers)).name();
  StatusOr<std::unique_ptr<checkpoint::Checkpoint>> created =
      checkpoint::Checkpoint::Create(root, objects);
  Check(created.status(), "building the checkpoint");
  model.checkpoint = std::move(created).value();
  StatusOr<proto::GraphDef> graph = root.ToGraphDef();
  Check(graph.status(), "building the graph");
  model.graph = std::move(graph).value();
  return model;
}

std::unique_ptr<Session> NewModelSession(const BenchModel& model) {
  StatusOr<std::unique_ptr<Session>> session = NewSession(SessionOptions());
  Check(session.status(), "creating a session");
  Check((*session)->Create(model.graph), "creating the graph");
  return std::move(session).value();
}

// write+fsync of `tensors`' bytes to `path`: the floor a save is measured against.
double RawWrite(const std::string& path, const std::vector<Tensor>& tensors) {
  const auto start = Clock::now();
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) Check(Internal("open ", path), "raw write");
  for (const Tensor& tensor : tensors) {
    const char* data = static_cast<const char*>(tensor.raw_data());
    for (size_t done = 0; done < tensor.TotalBytes();) {
      const ssize_t n = write(fd, data + done, tensor.TotalBytes() - done);
      if (n <= 0) Check(Internal("write ", path), "raw write");
      done += static_cast<size_t>(n);
    }
  }
  if (fsync(fd) != 0) Check(Internal("fsync ", path), "raw write");
  close(fd);
  return Since(start);
}

// read of the whole file into `buffer`, already allocated and touched (so no page faults are
// timed): the floor a restore is measured against.
double RawRead(const std::string& path, size_t bytes, char* buffer) {
  const auto start = Clock::now();
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) Check(Internal("open ", path), "raw read");
  for (size_t done = 0; done < bytes;) {
    const ssize_t n = read(fd, buffer + done, std::min<size_t>(bytes - done, 8 << 20));
    if (n <= 0) Check(Internal("read ", path), "raw read");
    done += static_cast<size_t>(n);
  }
  close(fd);
  return Since(start);
}

int Main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: checkpoint_bench DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  Check(io::RemoveAll(dir), "emptying the directory");
  Check(io::CreateDirectories(dir), "creating the directory");
  BenchModel model = BuildBenchModel();
  std::unique_ptr<Session> session = NewModelSession(model);
  std::vector<Tensor> values;
  Check(session->Run({}, {}, {model.init}, &values), "initializing");
  Check(session->Run({}, model.reads, {}, &values), "reading the variables");
  size_t bytes = 0;
  for (const Tensor& value : values) bytes += value.TotalBytes();

  const std::string raw = io::JoinPath(dir, "raw.bin");
  const std::string saved = io::JoinPath(dir, "ckpt-1");
  std::vector<char> read_buffer(bytes, 1);
  double raw_write = 1e9, save = 1e9, raw_read = 1e9, restore = 1e9;
  for (int repeat = 0; repeat < kRepeats; ++repeat) {
    Check(io::RemoveAll(raw), "removing the raw file");
    raw_write = std::min(raw_write, RawWrite(raw, values));
    Check(io::RemoveAll(saved), "removing the checkpoint");
    auto start = Clock::now();
    Check(model.checkpoint->Save(*session, saved, 1, {}), "saving");
    save = std::min(save, Since(start));

    raw_read = std::min(raw_read, RawRead(raw, bytes, read_buffer.data()));
    // Restored into a fresh session, as `weft train` resumes: the restore replaces initialization.
    std::unique_ptr<Session> fresh = NewModelSession(model);
    start = Clock::now();
    Check(model.checkpoint->Restore(*fresh, saved).status(), "restoring");
    restore = std::min(restore, Since(start));
  }
  const double megabytes = static_cast<double>(bytes) / (1 << 20);
  std::printf("METRIC checkpoint_model_mb %.0f MB\n", megabytes);
  std::printf("METRIC checkpoint_save_seconds %.3f s\n", save);
  std::printf("METRIC checkpoint_raw_write_seconds %.3f s\n", raw_write);
  std::printf("METRIC checkpoint_save_mb_per_sec %.0f MB/s\n", megabytes / save);
  std::printf("METRIC checkpoint_raw_write_mb_per_sec %.0f MB/s\n", megabytes / raw_write);
  std::printf("RATIO checkpoint_save_vs_raw_write %.3f\n", raw_write / save);
  std::printf("METRIC checkpoint_restore_seconds %.3f s\n", restore);
  std::printf("METRIC checkpoint_raw_read_seconds %.3f s\n", raw_read);
  std::printf("METRIC checkpoint_restore_mb_per_sec %.0f MB/s\n", megabytes / restore);
  std::printf("METRIC checkpoint_raw_read_mb_per_sec %.0f MB/s\n", megabytes / raw_read);
  std::printf("RATIO checkpoint_restore_vs_raw_read %.3f\n", raw_read / restore);
  Check(io::RemoveAll(dir), "cleaning up");
  return 0;
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) { return weft::Main(argc, argv); }

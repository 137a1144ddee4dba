// Crash-safe files. DurableFileWriter writes a file under a temporary name in the same directory,
// and Commit() fsyncs it, renames it over the final name and fsyncs the directory, so a reader
// sees either the old file, or the complete new one, never a partial one, even when the process
// or the machine dies mid-way. Every error names the path and the failing call (a full disk is
// "no space left on device" with the path). Also the small helpers a checkpoint needs: reading a
// whole file, creating and syncing directories, renaming durably, removing a tree. Not
// thread-safe per object; distinct objects may be used from different threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/core/statusor.h"

namespace weft::io {

class DurableFileWriter {
 public:
  // Creates "<path>.tmp-<pid>-<n>" next to `path` (mode 0644). NotFound / PermissionDenied-like
  // errors name the directory.
  static StatusOr<std::unique_ptr<DurableFileWriter>> Create(const std::string& path);
  // Removes the temporary file unless Commit() succeeded.
  ~DurableFileWriter();
  DurableFileWriter(const DurableFileWriter&) = delete;
  DurableFileWriter& operator=(const DurableFileWriter&) = delete;

  // Appends `size` bytes (large writes go straight to write(2), retried on short writes and
  // EINTR). ENOSPC and other errors name the final path.
  Status Append(const void* data, size_t size);
  Status Append(std::string_view bytes) { return Append(bytes.data(), bytes.size()); }
  // Bytes appended so far.
  uint64_t size() const { return size_; }
  // fsync, close, rename over the final path, fsync the directory. After an error the temporary
  // file is removed and the final path is untouched.
  Status Commit();

  const std::string& path() const { return path_; }

 private:
  DurableFileWriter(std::string path, std::string temp_path, int fd)
      : path_(std::move(path)), temp_path_(std::move(temp_path)), fd_(fd) {}

  // Writes out `buffer_`.
  Status Flush();
  // Closes the descriptor and unlinks the temporary file (once).
  void Abandon();

  std::string path_;
  std::string temp_path_;  // empty once the temporary file is gone (renamed or removed)
  int fd_ = -1;
  uint64_t size_ = 0;
  bool committed_ = false;
  // Small appends gather here so that a file of many small tensors takes few write(2) calls.
  std::string buffer_;
  // The first write error; later Appends and Commit return it.
  Status error_;
};

// Writes `contents` to `path` through a DurableFileWriter (small files: manifests, indexes).
Status WriteFileDurably(const std::string& path, std::string_view contents);

// The whole file; NotFound naming the path when it does not exist.
StatusOr<std::string> ReadFileToString(const std::string& path);

// Creates `path` and its missing parents (mode 0755); OK when it already exists as a directory.
Status CreateDirectories(const std::string& path);
// fsyncs the directory `path` (so renames and creations in it survive a crash).
Status SyncDirectory(const std::string& path);
// rename(2) `from` to `to` (files or directories, same file system), then fsyncs the parent
// directory of `to`.
Status RenameDurably(const std::string& from, const std::string& to);
// Removes a file or a directory tree; OK when it does not exist.
Status RemoveAll(const std::string& path);
// Whether `path` exists (any kind); false on any error.
bool PathExists(const std::string& path);
// The names (not paths) of the entries of directory `path`, sorted; "." and ".." left out.
StatusOr<std::vector<std::string>> ListDirectory(const std::string& path);
// "<a>/<b>" without doubling the slash.
std::string JoinPath(std::string_view a, std::string_view b);
// The directory part of `path` ("." when it has none).
std::string DirectoryOf(std::string_view path);

}  // namespace weft::io

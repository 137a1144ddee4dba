#include "weft/io/durable_file.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "weft/io/durable_file_internal.h"

namespace weft::io {
namespace {

// Appends up to this size are gathered in the writer's buffer; larger ones go straight to write(2)
// so that tensor bytes are never copied.
constexpr size_t kBufferBytes = 64 << 10;
// Linux moves at most 0x7ffff000 bytes per write(2) or read(2); asking for no more than that keeps
// every call a full one on the fast path.
constexpr size_t kMaxIoBytes = size_t{1} << 30;

// strerror is not thread-safe; glibc's strerror_r returns the message (GNU) or fills the buffer
// (XSI) depending on feature macros, and these overloads accept either.
[[maybe_unused]] const char* StrerrorResult(const char* message, const char*) { return message; }
[[maybe_unused]] const char* StrerrorResult(int rc, const char* buffer) {
  return rc == 0 ? buffer : "unknown error";
}

std::string ErrnoText(int err) {
  char buffer[256] = {};
  return StrerrorResult(strerror_r(err, buffer, sizeof(buffer)), buffer);
}

int OpenRetrying(const char* path, int flags, mode_t mode = 0) {
  int fd;
  do {
    fd = ::open(path, flags, mode);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

int FsyncRetrying(int fd) {
  int rc;
  do {
    rc = ::fsync(fd);
  } while (rc != 0 && errno == EINTR);
  return rc;
}

}  // namespace

namespace internal {

Status ErrnoToStatus(int err, std::string_view call, std::string_view path) {
  const std::string detail = StrCat(call, " ", path, ": ", ErrnoText(err));
  switch (err) {
    case ENOENT:
      return NotFound(detail);
    case EACCES:
    case EPERM:
    case EROFS:
      return PermissionDenied(detail);
    case ENOSPC:
    case EDQUOT:
      return ResourceExhausted("no space left on device writing ", path, " (", call, ": ",
                               ErrnoText(err), ")");
    case EMFILE:
    case ENFILE:
    case ENOMEM:
      return ResourceExhausted(detail);
    case EEXIST:
      return AlreadyExists(detail);
    case ENOTDIR:
    case EISDIR:
      return FailedPrecondition(detail);
    case EIO:
      return DataLoss(detail);
    default:
      return Unknown(detail);
  }
}

Status WriteFully(int fd, const void* data, size_t size, std::string_view path) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd, p, std::min(size, kMaxIoBytes));
    if (written < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, "write", path);
    }
    // A write that moves nothing would otherwise spin here forever.
    if (written == 0) return Unknown("write ", path, ": no progress (0 bytes written)");
    p += written;
    size -= static_cast<size_t>(written);
  }
  return Status::OK();
}

}  // namespace internal

StatusOr<std::unique_ptr<DurableFileWriter>> DurableFileWriter::Create(const std::string& path) {
  if (path.empty()) return InvalidArgument("cannot write a file with an empty path");
  // pid and counter make the name unique across processes and writers, so O_EXCL never trips
  // over a live writer, only over debris of a crashed process that had the same pid.
  static std::atomic<uint64_t> counter{0};
  std::string temp_path = StrCat(path, ".tmp-", ::getpid(), "-", counter.fetch_add(1));
  const int fd = OpenRetrying(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    const std::string directory = DirectoryOf(path);
    if (err == ENOENT || err == ENOTDIR) {
      return NotFound("directory ", directory, " does not exist (writing ", path, ": open ",
                      temp_path, ": ", ErrnoText(err), ")");
    }
    if (err == EACCES || err == EPERM || err == EROFS) {
      return PermissionDenied("cannot create files in directory ", directory, " (writing ", path,
                              ": open ", temp_path, ": ", ErrnoText(err), ")");
    }
    return internal::ErrnoToStatus(err, StrCat("open ", temp_path, " for"), path);
  }
  return std::unique_ptr<DurableFileWriter>(new DurableFileWriter(path, std::move(temp_path), fd));
}

DurableFileWriter::~DurableFileWriter() { Abandon(); }

void DurableFileWriter::Abandon() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (!temp_path_.empty()) {
    ::unlink(temp_path_.c_str());
    temp_path_.clear();
  }
}

Status DurableFileWriter::Flush() {
  if (buffer_.empty()) return Status::OK();
  Status status = internal::WriteFully(fd_, buffer_.data(), buffer_.size(), path_);
  buffer_.clear();
  return status;
}

Status DurableFileWriter::Append(const void* data, size_t size) {
  if (committed_ || fd_ < 0) {
    return FailedPrecondition("cannot append to ", path_, ": the writer is already ",
                              committed_ ? "committed" : "closed after an error");
  }
  if (!error_.ok()) return error_;
  if (size == 0) return Status::OK();
  Status status;
  if (buffer_.size() + size <= kBufferBytes) {
    if (buffer_.capacity() < kBufferBytes) buffer_.reserve(kBufferBytes);
    buffer_.append(static_cast<const char*>(data), size);
  } else {
    status = Flush();
    if (status.ok() && size >= kBufferBytes) {
      status = internal::WriteFully(fd_, data, size, path_);
    } else if (status.ok()) {
      buffer_.append(static_cast<const char*>(data), size);
    }
  }
  if (!status.ok()) {
    error_ = status;
    return status;
  }
  size_ += size;
  return Status::OK();
}

Status DurableFileWriter::Commit() {
  if (committed_) return FailedPrecondition("file ", path_, " is already committed");
  if (fd_ < 0) {
    return FailedPrecondition("cannot commit ", path_, ": an earlier commit failed");
  }
  Status status = error_;
  if (status.ok()) status = Flush();
  if (status.ok() && FsyncRetrying(fd_) != 0) {
    status = internal::ErrnoToStatus(errno, "fsync", path_);
  }
  const int fd = fd_;
  fd_ = -1;
  // close can be the first to report a failed deferred write (network file systems), so its
  // result counts.
  if (::close(fd) != 0 && status.ok()) status = internal::ErrnoToStatus(errno, "close", path_);
  if (status.ok() && ::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    status = internal::ErrnoToStatus(errno, StrCat("rename ", temp_path_, " to"), path_);
  }
  if (!status.ok()) {
    Abandon();
    return status;
  }
  temp_path_.clear();
  committed_ = true;
  // The file is in place now; a failure here only means the rename may not survive a crash, and
  // there is no way to take the rename back.
  return SyncDirectory(DirectoryOf(path_));
}

Status WriteFileDurably(const std::string& path, std::string_view contents) {
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<DurableFileWriter> writer, DurableFileWriter::Create(path));
  WEFT_RETURN_IF_ERROR(writer->Append(contents));
  return writer->Commit();
}

StatusOr<std::string> ReadFileToString(const std::string& path) {
  const int fd = OpenRetrying(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return NotFound("file ", path, " does not exist");
    return internal::ErrnoToStatus(err, "open", path);
  }
  std::string contents;
  struct stat info;
  // The size is only a hint (one byte more, so that end of file shows without growing the
  // string): the loop reads until end of file, whatever the file does meanwhile.
  size_t capacity = 64 << 10;
  if (::fstat(fd, &info) == 0 && info.st_size > 0) capacity = static_cast<size_t>(info.st_size) + 1;
  contents.resize(capacity);
  size_t used = 0;
  Status status;
  while (true) {
    if (used == contents.size()) contents.resize(2 * contents.size());
    const ssize_t n =
        ::read(fd, contents.data() + used, std::min(contents.size() - used, kMaxIoBytes));
    if (n < 0) {
      if (errno == EINTR) continue;
      status = internal::ErrnoToStatus(errno, "read", path);
      break;
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  contents.resize(used);
  ::close(fd);
  if (!status.ok()) return status;
  return contents;
}

Status CreateDirectories(const std::string& path) {
  if (path.empty()) return InvalidArgument("cannot create a directory with an empty path");
  std::string current = path.front() == '/' ? "/" : "";
  size_t start = 0;
  while (start < path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end > start) {
      if (!current.empty() && current.back() != '/') current.push_back('/');
      current.append(path, start, end - start);
      if (::mkdir(current.c_str(), 0755) != 0) {
        const int err = errno;
        struct stat info;
        if (err != EEXIST) return internal::ErrnoToStatus(err, "mkdir", current);
        if (::stat(current.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
          return FailedPrecondition("cannot create directory ", path, ": ", current,
                                    " exists and is not a directory");
        }
      }
    }
    start = end + 1;
  }
  return Status::OK();
}

Status SyncDirectory(const std::string& path) {
  const int fd = OpenRetrying(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return internal::ErrnoToStatus(errno, "open directory", path);
  Status status;
  // Some file systems cannot sync a directory and say EINVAL; their renames are as durable as
  // they will ever be, so that is not an error.
  if (FsyncRetrying(fd) != 0 && errno != EINVAL) {
    status = internal::ErrnoToStatus(errno, "fsync directory", path);
  }
  ::close(fd);
  return status;
}

Status RenameDurably(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return internal::ErrnoToStatus(errno, StrCat("rename ", from, " to"), to);
  }
  const std::string to_directory = DirectoryOf(to);
  WEFT_RETURN_IF_ERROR(SyncDirectory(to_directory));
  // Across directories the old entry's removal must survive a crash too, or both names could
  // come back.
  const std::string from_directory = DirectoryOf(from);
  if (from_directory != to_directory) return SyncDirectory(from_directory);
  return Status::OK();
}

Status RemoveAll(const std::string& path) {
  struct stat info;
  if (::lstat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) return Status::OK();
    return internal::ErrnoToStatus(errno, "lstat", path);
  }
  // lstat, not stat: a symbolic link to a directory is removed itself, never followed.
  if (S_ISDIR(info.st_mode)) {
    WEFT_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDirectory(path));
    for (const std::string& name : names) WEFT_RETURN_IF_ERROR(RemoveAll(JoinPath(path, name)));
    if (::rmdir(path.c_str()) != 0 && errno != ENOENT) {
      return internal::ErrnoToStatus(errno, "rmdir", path);
    }
    return Status::OK();
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return internal::ErrnoToStatus(errno, "unlink", path);
  }
  return Status::OK();
}

bool PathExists(const std::string& path) {
  struct stat info;
  return ::lstat(path.c_str(), &info) == 0;
}

StatusOr<std::vector<std::string>> ListDirectory(const std::string& path) {
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return internal::ErrnoToStatus(errno, "opendir", path);
  std::vector<std::string> names;
  Status status;
  while (true) {
    // readdir reports errors only through errno, and leaves it alone at the end.
    errno = 0;
    const dirent* entry = ::readdir(dir);
    if (entry == nullptr) {
      if (errno != 0) status = internal::ErrnoToStatus(errno, "readdir", path);
      break;
    }
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(dir);
  if (!status.ok()) return status;
  std::sort(names.begin(), names.end());
  return names;
}

std::string JoinPath(std::string_view a, std::string_view b) {
  if (a.empty()) return std::string(b);
  if (b.empty()) return std::string(a);
  const bool a_slash = a.back() == '/';
  const bool b_slash = b.front() == '/';
  if (a_slash && b_slash) return StrCat(a, b.substr(1));
  if (a_slash || b_slash) return StrCat(a, b);
  return StrCat(a, "/", b);
}

std::string DirectoryOf(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  std::string_view directory = path.substr(0, slash);
  while (directory.size() > 1 && directory.back() == '/') directory.remove_suffix(1);
  if (directory.empty()) return "/";
  return std::string(directory);
}

}  // namespace weft::io

// The pieces of durable_file.cc that tests reach directly: the errno-to-Status mapping every io
// call shares, and the write loop behind DurableFileWriter::Append, which takes any descriptor so
// that a test can aim it at /dev/full (a real ENOSPC without filling a disk). Thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "weft/core/status.h"

namespace weft::io::internal {

// A Status for `err` (an errno value) from `call` on `path`: ENOENT is NotFound; EACCES, EPERM and
// EROFS PermissionDenied; ENOSPC and EDQUOT ResourceExhausted ("no space left on device writing
// <path>"); EMFILE, ENFILE and ENOMEM ResourceExhausted; EEXIST AlreadyExists; ENOTDIR and EISDIR
// FailedPrecondition; EIO DataLoss; anything else Unknown. The message names the call, the path
// and strerror.
Status ErrnoToStatus(int err, std::string_view call, std::string_view path);

// write(2)s all `size` bytes to `fd`, retrying after EINTR and short writes; errors name `path`.
Status WriteFully(int fd, const void* data, size_t size, std::string_view path);

}  // namespace weft::io::internal

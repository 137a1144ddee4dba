// ByteReader: reads the bytes of a file front to back, inflating gzip'd files on the fly. Whether a
// file is gzip'd is decided by its first two bytes (1f 8b), never by its name. A reader is used by
// one thread at a time; it owns its open file and closes it when destroyed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "weft/core/statusor.h"

namespace weft::train {

class ByteReader {
 public:
  virtual ~ByteReader() = default;

  // Fills out[0, size) and returns how many bytes it filled: fewer than `size` only when the data
  // ends. Reading past the end returns 0, never an error. For gzip'd files the stream's checksum is
  // verified when its end is reached; a corrupt or cut-off stream returns DataLoss naming the path.
  virtual StatusOr<size_t> Read(uint8_t* out, size_t size) = 0;

  // True when the file is gzip'd (the bytes returned are the inflated ones).
  virtual bool compressed() const = 0;

  // The path given to OpenByteReader, for messages.
  virtual const std::string& path() const = 0;
};

// Opens `path`: NotFound when it does not exist, PermissionDenied or Unavailable when it cannot be
// opened. A gzip'd file may hold several concatenated gzip members; they read as one stream.
StatusOr<std::unique_ptr<ByteReader>> OpenByteReader(const std::string& path);

}  // namespace weft::train

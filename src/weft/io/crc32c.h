// CRC32C (Castagnoli, the iSCSI polynomial 0x1EDC6F41, reflected): the checksum of every tensor
// in a checkpoint. Uses the SSE4.2 crc32 instruction when the CPU has it (checked once at run
// time), else a table-driven fallback; both give the same values. Thread-safe (pure functions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace weft::io {

// The CRC32C of `size` bytes at `data` ("123456789" gives 0xE3069283).
uint32_t Crc32c(const void* data, size_t size);
// The CRC32C of the bytes hashed into `crc` followed by these `size` bytes:
// Crc32cExtend(Crc32c(a), b) == Crc32c(a + b).
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size);

// `crc` as 8 lower-case hex digits ("e3069283"), the form safetensors metadata and checkpoint
// manifests store.
std::string Crc32cToHex(uint32_t crc);
// Parses exactly 8 hex digits (either case) into `*crc`; false (and `*crc` untouched) otherwise.
bool ParseCrc32cHex(std::string_view text, uint32_t* crc);

}  // namespace weft::io

// The two CRC32C implementations behind Crc32cExtend, exposed so that tests can check that they
// agree (the dispatcher only ever runs one of them on a given machine). Same contract as
// Crc32cExtend. Thread-safe (pure functions).
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft::io::internal {

// Slicing-by-8 tables; runs on any CPU.
uint32_t Crc32cExtendSoftware(uint32_t crc, const void* data, size_t size);
// Whether this CPU has SSE4.2 (so Crc32cExtendHardware may be called).
bool Crc32cHardwareAvailable();
// The SSE4.2 crc32 instruction over three interleaved streams; only when
// Crc32cHardwareAvailable() (on other CPUs it falls back to the software path).
uint32_t Crc32cExtendHardware(uint32_t crc, const void* data, size_t size);

}  // namespace weft::io::internal

// The bytes serialize() returns: a 24-byte header, then Faiss's own write_index output.
//
//   offset 0   8 bytes  magic "FNCFAISS"
//   offset 8   u32 LE   format version (1)
//   offset 12  u32 LE   CRC-32 (IEEE, as zlib.crc32) of the payload
//   offset 16  u64 LE   payload length
//   offset 24  payload  faiss::write_index
//
// The checksum lets deserialize() refuse damaged bytes before Faiss reads them: Faiss trusts the
// sizes it reads and would try to allocate whatever a flipped bit says.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fenec {

constexpr size_t kEnvelopeHeaderSize = 24;
constexpr uint32_t kEnvelopeVersion = 1;

uint32_t Crc32(const uint8_t* data, size_t size);

/** Writes the header for `payload` into `out` (kEnvelopeHeaderSize bytes). */
void WriteEnvelopeHeader(uint8_t* out, const uint8_t* payload, uint64_t payload_size);

struct Payload {
  const uint8_t* data;
  size_t size;
};

/** The payload inside `data`, or a BadIndexError saying what is wrong with the envelope. */
Payload OpenEnvelope(const uint8_t* data, size_t size);

}  // namespace fenec

#include "envelope.h"

#include <array>
#include <cstring>
#include <string>

#include "errors.h"

namespace fenec {

namespace {

constexpr char kMagic[8] = {'F', 'N', 'C', 'F', 'A', 'I', 'S', 'S'};

// Slicing-by-8 tables for the reflected IEEE polynomial: about 1-2 GB/s, so a 150 MB index
// costs a tenth of a second, not the second a byte-at-a-time loop would.
using CrcTables = std::array<std::array<uint32_t, 256>, 8>;

CrcTables MakeTables() {
  CrcTables t{};
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int j = 0; j < 8; j++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++) {
    for (size_t s = 1; s < 8; s++) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  }
  return t;
}

const CrcTables& Tables() {
  static const CrcTables tables = MakeTables();
  return tables;
}

void PutU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

void PutU64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint32_t GetU32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

uint64_t GetU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

}  // namespace

uint32_t Crc32(const uint8_t* data, size_t size) {
  const CrcTables& t = Tables();
  uint32_t c = 0xFFFFFFFFu;
  while (size >= 8) {
    uint32_t lo = c ^ GetU32(data);
    uint32_t hi = GetU32(data + 4);
    c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
        t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
    data += 8;
    size -= 8;
  }
  while (size-- > 0) c = t[0][(c ^ *data++) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

void WriteEnvelopeHeader(uint8_t* out, const uint8_t* payload, uint64_t payload_size) {
  std::memcpy(out, kMagic, sizeof kMagic);
  PutU32(out + 8, kEnvelopeVersion);
  PutU32(out + 12, Crc32(payload, payload_size));
  PutU64(out + 16, payload_size);
}

Payload OpenEnvelope(const uint8_t* data, size_t size) {
  if (size < kEnvelopeHeaderSize || std::memcmp(data, kMagic, sizeof kMagic) != 0) {
    throw BadIndexError("the bytes do not start with the FNCFAISS header that serialize() writes");
  }
  uint32_t version = GetU32(data + 8);
  if (version != kEnvelopeVersion) {
    throw BadIndexError("format version " + std::to_string(version) + ", this build reads version " +
                        std::to_string(kEnvelopeVersion));
  }
  uint64_t length = GetU64(data + 16);
  if (length != size - kEnvelopeHeaderSize) {
    throw BadIndexError("the header announces " + std::to_string(length) + " bytes of index and " +
                        std::to_string(size - kEnvelopeHeaderSize) + " follow (truncated or padded)");
  }
  const uint8_t* payload = data + kEnvelopeHeaderSize;
  if (Crc32(payload, length) != GetU32(data + 12)) {
    throw BadIndexError("checksum mismatch: the index bytes are damaged");
  }
  return Payload{payload, static_cast<size_t>(length)};
}

}  // namespace fenec

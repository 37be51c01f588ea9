// Little/big-endian integer encoding for the persisted formats.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>

namespace auxstore::internal {

inline void PutLE64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void PutLE32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void PutLE16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
inline uint64_t GetLE64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline uint32_t GetLE32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline uint16_t GetLE16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

inline void PutBE32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}
inline void PutBE64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (56 - 8 * i));
}
inline uint32_t GetBE32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
inline uint64_t GetBE64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}

// Appending writers for building variable-length records.
inline void AppendLE64(std::string* s, uint64_t v) {
  uint8_t b[8];
  PutLE64(b, v);
  s->append(reinterpret_cast<const char*>(b), 8);
}
inline void AppendLE32(std::string* s, uint32_t v) {
  uint8_t b[4];
  PutLE32(b, v);
  s->append(reinterpret_cast<const char*>(b), 4);
}
inline void AppendFloatBits(std::string* s, float f) { AppendLE32(s, std::bit_cast<uint32_t>(f)); }

// The layout fields of a QSA geometry, in the order every persisted
// serialization uses: hd, max_tokens, ratio, rot (u32), theta, eps (f32 bits).
template <typename QsaGeometryT>
void AppendQsaGeometry(std::string* s, const QsaGeometryT& q) {
  AppendLE32(s, q.hd);
  AppendLE32(s, q.max_tokens);
  AppendLE32(s, q.ratio);
  AppendLE32(s, q.rot);
  AppendFloatBits(s, q.theta);
  AppendFloatBits(s, q.eps);
}

// Overflow-checked arithmetic on sizes read from untrusted bytes.
inline bool MulOverflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}
inline bool AddOverflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_add_overflow(a, b, out);
}

}  // namespace auxstore::internal

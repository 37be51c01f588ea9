// Helpers shared by the format tests: random bytes, hex, error matchers.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "auxstore/blob_codecs.h"
#include "auxstore/status.h"

namespace auxstore::test {

inline std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

inline ByteSpan AsBytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

inline std::string ToHexString(ByteSpan bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  for (uint8_t b : bytes) {
    s.push_back(kDigits[b >> 4]);
    s.push_back(kDigits[b & 15]);
  }
  return s;
}

inline std::string ToHexString(std::string_view s) { return ToHexString(AsBytes(s)); }

// `status` is an error of `code` whose message contains `substr`.
inline ::testing::AssertionResult IsError(const Status& status, StatusCode code,
                                          std::string_view substr) {
  if (status.ok()) return ::testing::AssertionFailure() << "expected an error, got OK";
  if (status.code() != code) {
    return ::testing::AssertionFailure()
           << "expected code " << StatusCodeName(code) << ", got " << status.ToString();
  }
  if (status.message().find(substr) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "message \"" << status.message() << "\" lacks \"" << substr << "\"";
  }
  return ::testing::AssertionSuccess();
}

template <typename T>
::testing::AssertionResult IsError(const Result<T>& result, StatusCode code,
                                   std::string_view substr) {
  return IsError(result.status(), code, substr);
}

}  // namespace auxstore::test

#define EXPECT_ERROR(expr, code, substr) \
  EXPECT_TRUE(::auxstore::test::IsError((expr), ::auxstore::StatusCode::code, (substr)))

// Status and Result<T> (include/auxstore/status.h, format/status.cc).
#include "auxstore/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tests/format/test_util.h"

namespace auxstore {
namespace {

TEST(StatusCode, PersistedValuesAreNeverRenumbered) {
  static_assert(static_cast<int>(StatusCode::kOk) == 0);
  static_assert(static_cast<int>(StatusCode::kNotFound) == 1);
  static_assert(static_cast<int>(StatusCode::kCorruption) == 2);
  static_assert(static_cast<int>(StatusCode::kInvalidArgument) == 3);
  static_assert(static_cast<int>(StatusCode::kOutOfRange) == 4);
  static_assert(static_cast<int>(StatusCode::kCapacity) == 5);
  static_assert(static_cast<int>(StatusCode::kIOError) == 6);
  static_assert(static_cast<int>(StatusCode::kBusy) == 7);
  static_assert(static_cast<int>(StatusCode::kUnavailable) == 8);
  static_assert(static_cast<int>(StatusCode::kNotSupported) == 9);
  static_assert(static_cast<int>(StatusCode::kInternal) == 10);
}

TEST(StatusCode, NamesAreStable) {
  EXPECT_EQ(StatusCodeName(StatusCode::kOk), "OK");
  EXPECT_EQ(StatusCodeName(StatusCode::kNotFound), "NotFound");
  EXPECT_EQ(StatusCodeName(StatusCode::kCorruption), "Corruption");
  EXPECT_EQ(StatusCodeName(StatusCode::kInvalidArgument), "InvalidArgument");
  EXPECT_EQ(StatusCodeName(StatusCode::kOutOfRange), "OutOfRange");
  EXPECT_EQ(StatusCodeName(StatusCode::kCapacity), "Capacity");
  EXPECT_EQ(StatusCodeName(StatusCode::kIOError), "IOError");
  EXPECT_EQ(StatusCodeName(StatusCode::kBusy), "Busy");
  EXPECT_EQ(StatusCodeName(StatusCode::kUnavailable), "Unavailable");
  EXPECT_EQ(StatusCodeName(StatusCode::kNotSupported), "NotSupported");
  EXPECT_EQ(StatusCodeName(StatusCode::kInternal), "Internal");
  EXPECT_EQ(StatusCodeName(static_cast<StatusCode>(99)), "Unknown");
}

TEST(Status, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_EQ(Status::Ok(), s);
}

TEST(Status, EachFactorySetsItsCode) {
  EXPECT_EQ(Status::NotFound("m").code(), StatusCode::kNotFound);
  EXPECT_EQ(Status::Corruption("m").code(), StatusCode::kCorruption);
  EXPECT_EQ(Status::InvalidArgument("m").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Status::OutOfRange("m").code(), StatusCode::kOutOfRange);
  EXPECT_EQ(Status::Capacity("m").code(), StatusCode::kCapacity);
  EXPECT_EQ(Status::IOError("m").code(), StatusCode::kIOError);
  EXPECT_EQ(Status::Busy("m").code(), StatusCode::kBusy);
  EXPECT_EQ(Status::Unavailable("m").code(), StatusCode::kUnavailable);
  EXPECT_EQ(Status::NotSupported("m").code(), StatusCode::kNotSupported);
  EXPECT_EQ(Status::Internal("m").code(), StatusCode::kInternal);
  EXPECT_TRUE(Status::NotFound("m").IsNotFound());
  EXPECT_TRUE(Status::Corruption("m").IsCorruption());
  EXPECT_TRUE(Status::InvalidArgument("m").IsInvalidArgument());
  EXPECT_FALSE(Status::Corruption("m").ok());
}

TEST(Status, ToStringIsCodeNameColonMessage) {
  EXPECT_EQ(Status::Corruption("QSA aux blob truncated").ToString(),
            "Corruption: QSA aux blob truncated");
  EXPECT_EQ(Status::OutOfRange("x").ToString(), "OutOfRange: x");
}

TEST(Status, WithContextPrependsAndKeepsTheCode) {
  const Status s = Status::Corruption("bad magic").WithContext("layer 3");
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.message(), "layer 3: bad magic");
  EXPECT_EQ(s.WithContext("prefix ab").message(), "prefix ab: layer 3: bad magic");
}

TEST(Status, WithContextOnOkStaysOk) {
  const Status s = Status::Ok().WithContext("layer 3");
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.message(), "");
}

TEST(Status, EqualityComparesCodeAndMessage) {
  EXPECT_EQ(Status::Busy("a"), Status::Busy("a"));
  EXPECT_NE(Status::Busy("a"), Status::Busy("b"));
  EXPECT_NE(Status::Busy("a"), Status::IOError("a"));
}

TEST(Result, HoldsAValue) {
  Result<int> r = 42;
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.has_value());
  EXPECT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(*r, 42);
  EXPECT_EQ(r.value(), 42);
  EXPECT_TRUE(r.status().ok());
}

TEST(Result, HoldsAnError) {
  Result<int> r = Status::NotFound("no snapshot");
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(static_cast<bool>(r));
  EXPECT_EQ(r.status(), Status::NotFound("no snapshot"));
  EXPECT_EQ(r.error().message(), "no snapshot");
}

TEST(Result, HoldsMoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(7);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(**r, 7);
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 7);
}

TEST(Result, ArrowReachesTheValue) {
  Result<std::string> r = std::string("abc");
  EXPECT_EQ(r->size(), 3u);
}

Result<int> Half(int x) {
  if (x % 2 != 0) return Status::InvalidArgument(std::to_string(x) + " is odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  AUXSTORE_ASSIGN_OR_RETURN(int half, Half(x));
  AUXSTORE_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

Status CheckEven(int x) {
  AUXSTORE_RETURN_IF_ERROR(Half(x).status());
  return Status::Ok();
}

TEST(AssignOrReturn, AssignsTheValueOnSuccess) {
  auto r = Quarter(12);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 3);
}

TEST(AssignOrReturn, ReturnsTheFirstErrorUnchanged) {
  EXPECT_EQ(Quarter(7).status(), Status::InvalidArgument("7 is odd"));
  EXPECT_EQ(Quarter(6).status(), Status::InvalidArgument("3 is odd"));
}

TEST(AssignOrReturn, MovesMoveOnlyValues) {
  auto make = []() -> Result<std::unique_ptr<int>> { return std::make_unique<int>(5); };
  auto use = [&]() -> Result<int> {
    AUXSTORE_ASSIGN_OR_RETURN(std::unique_ptr<int> p, make());
    return *p;
  };
  EXPECT_EQ(*use(), 5);
}

TEST(ReturnIfError, PassesOkAndReturnsErrors) {
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_ERROR(CheckEven(5), kInvalidArgument, "5 is odd");
}

}  // namespace
}  // namespace auxstore

// The CPU reference of qsa_block_pool against an independent float64
// computation of design.md section 2, and its argument checks.
#include "gpu/qsa_block_pool_ref.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "gpu/bf16.h"
#include "tests/gpu/gpu_test_util.h"

namespace auxstore {
namespace {

using gpu::Bf16ToFloat;
using gpu::FloatToBf16;
using testing::RandomBf16;

struct Case {
  uint32_t hd, ratio, rot, blocks;
  float theta, eps;
};

// Block b in float64, except where the spec fixes fp32: f_j is rounded to
// fp32 and the angle a = pos * f_j is an fp32 product.
std::vector<double> PoolF64(const std::vector<uint16_t>& raw, const std::vector<uint16_t>& q,
                            const std::vector<uint16_t>& w, uint64_t b, const Case& c) {
  const uint32_t hd = c.hd;
  std::vector<double> s(c.ratio), p(hd, 0.0), y(hd);
  double m = -INFINITY;
  for (uint32_t i = 0; i < c.ratio; ++i) {
    double dot = 0;
    for (uint32_t d = 0; d < hd; ++d)
      dot += double(Bf16ToFloat(raw[(b * c.ratio + i) * hd + d])) * Bf16ToFloat(q[d]);
    s[i] = dot / std::sqrt(double(hd));
    m = std::max(m, s[i]);
  }
  double sum = 0;
  for (auto& v : s) sum += (v = std::exp(v - m));
  for (uint32_t i = 0; i < c.ratio; ++i)
    for (uint32_t d = 0; d < hd; ++d)
      p[d] += s[i] / sum * Bf16ToFloat(raw[(b * c.ratio + i) * hd + d]);
  double sq = 0;
  for (double v : p) sq += v * v;
  const double rms = std::sqrt(sq / hd + c.eps);
  for (uint32_t d = 0; d < hd; ++d) y[d] = p[d] * Bf16ToFloat(w[d]) / rms;
  const uint32_t half = c.rot / 2;
  for (uint32_t j = 0; j < half; ++j) {
    const float f = float(std::pow(double(c.theta), -2.0 * j / c.rot));
    const double a = float(b * c.ratio) * f;  // fp32 product, per the spec
    const double x = y[j], z = y[j + half];
    y[j] = x * std::cos(a) - z * std::sin(a);
    y[j + half] = z * std::cos(a) + x * std::sin(a);
  }
  return y;
}

double Bf16Ulp(double x) {
  x = std::fabs(x);
  if (x < 1e-30) return 1e-30;
  return std::ldexp(1.0, std::ilogb(x) - 7);
}

class RefVsF64 : public ::testing::TestWithParam<Case> {};

TEST_P(RefVsF64, WithinOneBf16Ulp) {
  const Case c = GetParam();
  std::mt19937_64 rng(c.hd * 1000003u + c.ratio * 101u + c.rot);
  const uint32_t start = 1, n = c.blocks;
  const uint64_t tokens = uint64_t(start + n) * c.ratio + 3;
  auto raw = RandomBf16(tokens * c.hd, rng);
  auto q = RandomBf16(c.hd, rng, 0.5f);
  auto w = RandomBf16(c.hd, rng, 1.0f);
  std::vector<uint16_t> out((start + n) * c.hd, 0xdead);
  QsaBlockPoolArgs a{.ingested = tokens,
                     .start = start,
                     .n = n,
                     .ratio = c.ratio,
                     .hd = c.hd,
                     .rot = c.rot,
                     .theta = c.theta,
                     .eps = c.eps};
  ASSERT_TRUE(gpu::QsaBlockPoolReference(a, raw, q, w, out).ok());
  for (uint32_t d = 0; d < start * c.hd; ++d) ASSERT_EQ(out[d], 0xdead) << "block 0 untouched";
  int64_t worst = 0;
  for (uint64_t b = start; b < start + n; ++b) {
    auto want = PoolF64(raw, q, w, b, c);
    double row_max = 0;
    for (double v : want) row_max = std::max(row_max, std::fabs(v));
    for (uint32_t d = 0; d < c.hd; ++d) {
      const double got = Bf16ToFloat(out[b * c.hd + d]);
      // One bf16 ulp of the exact value; outputs that cancel to almost zero
      // are held to a tiny absolute error instead.
      const double tol = std::max(Bf16Ulp(want[d]), row_max * 0x1p-20);
      ASSERT_LE(std::fabs(got - want[d]), tol)
          << "block " << b << " dim " << d << " want " << want[d] << " got " << got;
      worst = std::max(worst, testing::Bf16UlpDistance(out[b * c.hd + d], FloatToBf16(want[d])));
    }
  }
  EXPECT_LE(worst, 1);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, RefVsF64,
    ::testing::Values(Case{8, 1, 8, 5, 10000.f, 1e-6f}, Case{16, 4, 0, 4, 10000.f, 1e-6f},
                      Case{64, 16, 32, 6, 10000.f, 1e-5f}, Case{64, 64, 64, 3, 500000.f, 1e-6f},
                      Case{128, 8, 64, 8, 10000.f, 1e-6f}, Case{128, 32, 128, 4, 1e6f, 1e-6f},
                      Case{96, 3, 2, 9, 10000.f, 0.0f}, Case{256, 2, 128, 5, 10000.f, 1e-6f}));

TEST(QsaBlockPoolRef, RefusesBadArgumentsAndWritesNothing) {
  std::mt19937_64 rng(7);
  const uint32_t hd = 16, ratio = 4;
  auto raw = RandomBf16(64 * hd, rng);
  auto q = RandomBf16(hd, rng), w = RandomBf16(hd, rng);
  const QsaBlockPoolArgs good{.ingested = 64,
                              .start = 0,
                              .n = 16,
                              .ratio = ratio,
                              .hd = hd,
                              .rot = 8,
                              .theta = 10000.f,
                              .eps = 1e-6f};
  auto bad = [&](auto mutate, StatusCode code) {
    QsaBlockPoolArgs a = good;
    mutate(a);
    std::vector<uint16_t> out(16 * hd, 0x7777);
    Status st = gpu::QsaBlockPoolReference(a, raw, q, w, out);
    EXPECT_EQ(st.code(), code) << st.ToString();
    for (uint16_t v : out) ASSERT_EQ(v, 0x7777);
  };
  bad([](QsaBlockPoolArgs& a) { a.ingested = 63; }, StatusCode::kOutOfRange);
  bad([](QsaBlockPoolArgs& a) { a.start = 1; }, StatusCode::kOutOfRange);
  bad([](QsaBlockPoolArgs& a) { a.start = 0xffffffffu; }, StatusCode::kOutOfRange);
  bad([](QsaBlockPoolArgs& a) { a.rot = 7; }, StatusCode::kInvalidArgument);
  bad([](QsaBlockPoolArgs& a) { a.rot = 18; }, StatusCode::kInvalidArgument);
  bad([](QsaBlockPoolArgs& a) { a.hd = 0; }, StatusCode::kInvalidArgument);
  bad([](QsaBlockPoolArgs& a) { a.ratio = 0; }, StatusCode::kInvalidArgument);
  bad([](QsaBlockPoolArgs& a) { a.n = 0; }, StatusCode::kInvalidArgument);
  bad([](QsaBlockPoolArgs& a) { a.theta = 0.f; }, StatusCode::kInvalidArgument);
  bad([](QsaBlockPoolArgs& a) { a.eps = -1.f; }, StatusCode::kInvalidArgument);
  bad([](QsaBlockPoolArgs& a) { a.eps = NAN; }, StatusCode::kInvalidArgument);
  // A span smaller than the launch's extent.
  std::vector<uint16_t> small(15 * hd, 0x7777);
  EXPECT_EQ(gpu::QsaBlockPoolReference(good, raw, q, w, small).code(), StatusCode::kOutOfRange);
  for (uint16_t v : small) ASSERT_EQ(v, 0x7777);
  // The good launch works and writes every block.
  std::vector<uint16_t> out(16 * hd, 0x7777);
  ASSERT_TRUE(gpu::QsaBlockPoolReference(good, raw, q, w, out).ok());
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(gpu::FloatToBf16(1.0f), 0x3f80);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0).
  EXPECT_EQ(gpu::FloatToBf16(1.0f + 0x1p-8f), 0x3f80);
  // 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6 (even): rounds up.
  EXPECT_EQ(gpu::FloatToBf16(1.0f + 3 * 0x1p-8f), 0x3f82);
  EXPECT_EQ(gpu::FloatToBf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
  EXPECT_TRUE(std::isnan(Bf16ToFloat(gpu::FloatToBf16(NAN))));
  EXPECT_TRUE(std::isinf(Bf16ToFloat(gpu::FloatToBf16(3.4e38f))));
}

}  // namespace
}  // namespace auxstore

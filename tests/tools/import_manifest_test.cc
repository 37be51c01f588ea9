// ParseImportManifest: every field of an untrusted manifest.json is checked.
#include "tools/cli/import_manifest.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "auxstore/prefix.h"
#include "tests/support/test_util.h"

namespace auxstore::testing {
namespace {

using nlohmann::json;

json Valid() {
  Manifest m;
  m.token_count = 9;
  m.chunk_bytes = 64;
  m.layers = {{0, Kind::kQsa, 16 + 64 * 2, 0, std::vector<uint8_t>(16), 64, {2}, {}},
              {5, Kind::kOpaque, 7, 0, {}, 7, {1}, {}}};
  const NamespaceSpec spec = TestSpec();
  return json::parse(cli::WriteExportManifest(NamespaceFingerprint(spec), spec, PrefixFromSeed(1),
                                              m, {"a.bin", "b.bin"}, {0x1234, 0xabcdef}));
}

Status Parse(const json& j) { return cli::ParseImportManifest(j.dump()).status(); }

TEST(ParseImportManifest, AcceptsWhatExportWrites) {
  auto plan = cli::ParseImportManifest(Valid().dump());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ns, NamespaceFingerprint(TestSpec()));
  EXPECT_EQ(plan->prefix, PrefixFromSeed(1));
  EXPECT_EQ(plan->token_count, 9u);
  ASSERT_EQ(plan->layers.size(), 2u);
  EXPECT_EQ(plan->layers[1].layer, 5u);
  EXPECT_EQ(plan->layers[1].kind, Kind::kOpaque);
  EXPECT_EQ(plan->layers[1].xxh3, 0xabcdefu);
  EXPECT_EQ(plan->spec.qsa.theta, TestSpec().qsa.theta);
}

TEST(ParseImportManifest, RejectsEachBadFieldByName) {
  struct Case {
    std::function<void(json&)> edit;
    const char* words;
  } cases[] = {
      {[](json& j) { j["format"] = "v2"; }, "format"},
      {[](json& j) { j.erase("prefix"); }, "prefix is missing"},
      {[](json& j) { j["prefix"] = "zz"; }, "prefix"},
      {[](json& j) { j["token_count"] = -1; }, "token_count is not a non-negative integer"},
      {[](json& j) { j["namespace"]["id"] = "0000000000000000"; }, "not the fingerprint"},
      {[](json& j) { j["namespace"]["qsa"]["hd"] = 1ull << 33; }, "namespace.qsa.hd"},
      {[](json& j) { j["namespace"]["qsa"]["theta"] = "x"; }, "theta is not a number"},
      {[](json& j) { j["layers"] = json::array(); }, "layers is empty"},
      {[](json& j) { j["layers"][1]["layer"] = 0; }, "not above the previous"},
      {[](json& j) { j["layers"][1]["kind"] = "FOO"; }, "layers[1].kind"},
      {[](json& j) { j["layers"][1]["file"] = "a.bin"; }, "named twice"},
      {[](json& j) { j["layers"][1]["file"] = "manifest.json"; }, "manifest itself"},
      {[](json& j) { j["layers"][1]["file"] = ""; }, "layers[1].file is empty"},
      {[](json& j) { j["layers"][0]["bytes"] = 1ull << 40; }, "more than a QSA layer"},
      {[](json& j) { j["layers"][1]["xxh3"] = "12"; }, "layers[1].xxh3"},
      {[](json& j) { j["token_digest"] = 5; }, "token_digest"},
  };
  for (const auto& c : cases) {
    json j = Valid();
    c.edit(j);
    Status s = Parse(j);
    EXPECT_TRUE(s.IsInvalidArgument()) << c.words << ": " << s.ToString();
    EXPECT_NE(s.message().find(c.words), std::string::npos) << s.message();
  }
  EXPECT_TRUE(cli::ParseImportManifest("{not json").status().IsInvalidArgument());
  EXPECT_TRUE(cli::ParseImportManifest("[1,2]").status().IsInvalidArgument());
  EXPECT_TRUE(cli::ParseImportManifest("").status().IsInvalidArgument());
}

TEST(ParseImportManifest, KindsNeedTheirGeometry) {
  json j = Valid();
  j["namespace"]["qsa"] = {{"hd", 0},  {"max_tokens", 0}, {"ratio", 0},
                           {"rot", 0}, {"theta", 0.0},    {"eps", 0.0}};
  NamespaceSpec spec = TestSpec();
  spec.qsa = {};
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(NamespaceFingerprint(spec)));
  j["namespace"]["id"] = hex;
  Status s = Parse(j);
  EXPECT_NE(s.message().find("no QSA geometry"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace auxstore::testing

// Read-only commands (verify, stats, ls, inspect, export) run beside a live
// writer; their --json output matches the store.
#include "tests/tools/cli_test_util.h"
#include "tools/cli/inspect.h"

namespace auxstore::testing {
namespace {

TEST(ReadOnlyCommands, WorkWhileTheWriterIsOpen) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  auto writer = OpenStore(path);
  const NamespaceId ns = writer->RegisterNamespace(TestSpec()).value();
  const NamespaceId other = writer->RegisterNamespace(TestSpec("other")).value();
  Written a = PutMixed(*writer, ns, 1, true), b = PutMixed(*writer, ns, 2, false);
  Written c = PutMixed(*writer, other, 3, false);
  ASSERT_TRUE(writer->Flush().ok());
  uint64_t total = 0;
  for (const Written* w : {&a, &b, &c})
    for (const auto& l : w->layers) total += l.second.size();

  CliRun v = RunBinary({"verify", path, "--json"});
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  EXPECT_EQ(v.Json()["snapshots_checked"].get<uint64_t>(), 3u);

  CliRun s = RunBinary({"stats", path, "--json"});
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_EQ(s.Json()["snapshots"].get<uint64_t>(), 3u);
  EXPECT_EQ(s.Json()["payload_bytes"].get<uint64_t>(), total);
  EXPECT_EQ(s.Json()["namespaces"].size(), 2u);

  CliRun ls = RunBinary({"ls", path, "--ns", cli::NamespaceHex(ns), "--json"});
  ASSERT_EQ(ls.code, 0) << ls.err;
  ASSERT_EQ(ls.Json().size(), 2u);
  std::set<std::string> prefixes;
  for (const auto& e : ls.Json()) prefixes.insert(e["prefix"].get<std::string>());
  EXPECT_EQ(prefixes, (std::set<std::string>{a.prefix.ToHex(), b.prefix.ToHex()}));
  EXPECT_EQ(RunBinary({"ls", path, "--json"}).Json().size(), 3u);

  CliRun in = RunBinary({"inspect", path, a.prefix.ToHex(), "--json"});  // namespace found
  ASSERT_EQ(in.code, 0) << in.err;
  auto j = in.Json();
  EXPECT_EQ(j["namespace"].get<std::string>(), cli::NamespaceHex(ns));
  EXPECT_EQ(j["spec"]["qsa"]["hd"].get<uint32_t>(), TestSpec().qsa.hd);
  ASSERT_EQ(j["layers"].size(), 3u);
  EXPECT_EQ(j["layers"][0]["kind"].get<std::string>(), "QSA");
  EXPECT_EQ(j["layers"][1]["kind"].get<std::string>(), "DSA");
  EXPECT_EQ(j["layers"][2]["bytes"].get<uint64_t>(), a.layers[2].second.size());
  EXPECT_TRUE(j["has_token_digest"].get<bool>());
  CliRun text = RunBinary({"inspect", path, a.prefix.ToHex()});
  EXPECT_NE(text.out.find("layer 1 DSA"), std::string::npos) << text.out;

  CliRun missing = RunInProcess({"inspect", path, std::string(32, '0')});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("no snapshot for prefix"), std::string::npos) << missing.err;
  EXPECT_EQ(RunInProcess({"inspect", path, "xyz"}).code, 2);

  CliRun ex = RunBinary({"export", path, a.prefix.ToHex(), dir.Sub("out"), "--json"});
  EXPECT_EQ(ex.code, 0) << ex.err;
  EXPECT_EQ(ex.Json()["layers"].get<uint64_t>(), 3u);
  ExpectReadsBack(*writer, a);  // the writer is unaffected
}

TEST(ReadOnlyCommands, AmbiguousPrefixNeedsANamespace) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  auto writer = OpenStore(path);
  const NamespaceId ns1 = writer->RegisterNamespace(TestSpec("one")).value();
  const NamespaceId ns2 = writer->RegisterNamespace(TestSpec("two")).value();
  Written a = PutMixed(*writer, ns1, 5, false);
  PutMixed(*writer, ns2, 5, false);  // same prefix, other namespace
  CliRun amb = RunInProcess({"inspect", path, a.prefix.ToHex()});
  EXPECT_EQ(amb.code, 2);
  EXPECT_NE(amb.err.find("pass --ns"), std::string::npos) << amb.err;
  CliRun one =
      RunInProcess({"inspect", path, a.prefix.ToHex(), "--ns", cli::NamespaceHex(ns2), "--json"});
  EXPECT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(one.Json()["spec"]["model_id"].get<std::string>(), "two");
}

}  // namespace
}  // namespace auxstore::testing

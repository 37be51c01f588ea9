// The CLI's --shared on a real pool: `ls` lists the directory's and the
// pool's snapshots marked where each lives, `stats` adds the pool's counts,
// `verify` finds a manifest object damaged behind the store's back and
// `verify --repair` clears it; ListSharedPool is the library call they print.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "auxstore/shared_pool.h"
#include "store/shared/shared_record.h"
#include "tests/rados/rados_test_env.h"
#include "tests/rados/shared_pool_fixture.h"
#include "tests/rados/shared_test_env.h"
#include "tools/cli/commands.h"

namespace auxstore::sharedtest {
namespace {

using nlohmann::json;

struct Ran {
  int code = 0;
  std::string out, err;
};

Ran Cli(std::vector<std::string> args) {
  args.insert(args.begin(), "auxstore");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int code = cli::RunCli(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

class SharedCliTest : public SharedPoolTest {};

TEST_F(SharedCliTest, LsAndStatsShowThePoolBesideTheDirectory) {
  const Conversation conv(31);
  NamespaceId ns = 0;
  {
    auto a = OpenShared(tmp_.Sub("a"), uri_);  // puts go to the pool too
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ns = (*a)->RegisterNamespace(conv.spec()).value();
    for (uint64_t n : {128, 256}) ASSERT_TRUE(conv.Put(**a, ns, n).ok()) << n;
  }
  {
    Options o;
    o.background_maintenance = false;
    auto c = Store::Open(o, tmp_.Sub("c"));  // a directory of its own, no pool
    ASSERT_TRUE(c.ok());
    ASSERT_EQ((*c)->RegisterNamespace(conv.spec()).value(), ns);
    ASSERT_TRUE(conv.Put(**c, ns, 64).ok());
  }

  // The library call.
  auto pool = ListSharedPool(uri_);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  ASSERT_EQ(pool->snapshots.size(), 2u);
  EXPECT_EQ(pool->damaged_manifests, 0u);
  EXPECT_EQ(pool->page_objects, Objects("page."));
  EXPECT_EQ(pool->pages_named, pool->page_objects) << "every page is named";
  EXPECT_GT(pool->unique_bytes, 0u);
  EXPECT_LT(pool->unique_bytes, pool->snapshots[0].manifest.payload_bytes() +
                                    pool->snapshots[1].manifest.payload_bytes())
      << "the 256-token snapshot shares the 128-token one's pages";
  EXPECT_EQ(pool->namespaces.at(ns).model_id, conv.spec().model_id);
  EXPECT_TRUE(ListSharedPool(uri_, ns + 1)->snapshots.empty());
  EXPECT_EQ(ListSharedPool("rados://").status().code(), StatusCode::kInvalidArgument);

  // ls: the writer's directory holds both (where=both); another directory
  // holds its own one (local) and sees the pool's two (pool).
  Ran r = Cli({"ls", tmp_.Sub("a"), "--shared", uri_});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Count(r.out, "where=both"), 2u) << r.out;
  r = Cli({"ls", tmp_.Sub("c"), "--shared", uri_, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json listed = json::parse(r.out);
  ASSERT_EQ(listed.size(), 3u) << r.out;
  std::map<std::string, std::string> where;
  for (const auto& s : listed) where[s["prefix"]] = s["where"];
  EXPECT_EQ(where[conv.PrefixOf(64).ToHex()], "local");
  EXPECT_EQ(where[conv.PrefixOf(128).ToHex()], "pool");
  EXPECT_EQ(where[conv.PrefixOf(256).ToHex()], "pool");

  // stats: the pool's part.
  r = Cli({"stats", tmp_.Sub("c"), "--shared", uri_, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json stats = json::parse(r.out);
  EXPECT_EQ(stats["snapshots"], 1);
  EXPECT_EQ(stats["pool"]["snapshots"], 2);
  EXPECT_EQ(stats["pool"]["page_objects"], Objects("page."));
  EXPECT_EQ(stats["pool"]["unique_bytes"], pool->unique_bytes);
  EXPECT_EQ(stats["pool"]["namespaces"][0]["model_id"], conv.spec().model_id);
  r = Cli({"stats", tmp_.Sub("c"), "--shared", uri_});
  EXPECT_NE(r.out.find("pool snapshots:     2"), std::string::npos) << r.out;

  // A manifest object overwritten behind the store's back: not listed,
  // counted; verify finds it; verify --repair clears it.
  const std::string victim = rados::ManifestObjectName(shared::SharedId(ns, conv.PrefixOf(128)));
  librados::bufferlist junk;
  junk.append("not a manifest");
  ASSERT_EQ(conn_->io().write_full(victim, junk), 0);
  r = Cli({"ls", tmp_.Sub("c"), "--shared", uri_});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(Count(r.out, "where=pool"), 1u) << r.out;
  EXPECT_NE(r.err.find("1 damaged manifest object"), std::string::npos) << r.err;
  r = Cli({"stats", tmp_.Sub("c"), "--shared", uri_, "--json"});
  EXPECT_EQ(json::parse(r.out)["pool"]["damaged_manifests"], 1);
  r = Cli({"verify", tmp_.Sub("c"), "--shared", uri_});
  EXPECT_EQ(r.code, cli::kExitCorruption) << r.out << r.err;
  r = Cli({"verify", tmp_.Sub("c"), "--shared", uri_, "--repair"});
  EXPECT_EQ(r.code, cli::kExitCorruption) << "found, and removed: " << r.out << r.err;
  char ns_hex[17];
  std::snprintf(ns_hex, sizeof ns_hex, "%016llx", static_cast<unsigned long long>(ns));
  EXPECT_NE(r.out.find("REMOVED " + std::string(ns_hex) + "/" + conv.PrefixOf(128).ToHex()),
            std::string::npos)
      << r.out;
  r = Cli({"verify", tmp_.Sub("c"), "--shared", uri_});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(ListSharedPool(uri_)->damaged_manifests, 0u);
}

}  // namespace
}  // namespace auxstore::sharedtest

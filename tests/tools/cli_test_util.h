// Helpers for the CLI tests: run `auxstore` as a binary (its path comes from
// the build, AUXSTORE_CLI_BINARY) or in-process through RunCli, and build
// stores with mixed snapshot kinds.
#pragma once

#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "auxstore/store.h"
#include "tests/support/test_util.h"
#include "tools/cli/commands.h"

namespace auxstore::testing {

struct CliRun {
  int code = -1;
  std::string out, err;
  nlohmann::json Json() const {
    auto j = nlohmann::json::parse(out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "not JSON: " << out;
    return j;
  }
};

inline std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The built binary; stderr goes to a temp file so both streams are checked.
inline CliRun RunBinary(const std::vector<std::string>& args) {
  TempDir tmp;
  std::string cmd = Quote(AUXSTORE_CLI_BINARY);
  for (const auto& a : args) cmd += " " + Quote(a);
  cmd += " 2>" + Quote(tmp.Sub("stderr"));
  CliRun r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (FILE* e = std::fopen(tmp.Sub("stderr").c_str(), "r")) {
    while ((n = std::fread(buf, 1, sizeof buf, e)) > 0) r.err.append(buf, n);
    std::fclose(e);
  }
  return r;
}

inline CliRun RunInProcess(const std::vector<std::string>& args) {
  std::vector<const char*> argv{"auxstore"};
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  CliRun r;
  r.code = cli::RunCli(static_cast<int>(argv.size()), argv.data(), out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

inline std::unique_ptr<Store> OpenStore(const std::string& path) {
  Options o;
  o.chunk_bytes = 64 * 1024;
  o.background_maintenance = false;
  auto s = Store::Open(o, path);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

// One snapshot's layers as written, to compare with what reads back.
struct Written {
  NamespaceId ns = 0;
  Prefix prefix;
  PutId put = 0;  // the put that stored its records
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> layers;
};

// QSA + DSA + opaque; `big` makes it cross the ingest threshold (1 MiB).
inline Written PutMixed(Store& store, NamespaceId ns, uint64_t seed, bool big) {
  const NamespaceSpec spec = TestSpec();
  Written w{ns, PrefixFromSeed(seed), {}};
  w.layers.push_back({0, QsaBlob(spec, big ? 3000 : 300, big ? 700 : 70, seed)});
  w.layers.push_back({1, DsaBlob(spec, big ? 2000 : 100, seed + 10)});
  w.layers.push_back({2, RandomBytes(big ? 700 * 1024 : 150 * 1024, seed + 20)});
  const Kind kinds[] = {Kind::kQsa, Kind::kDsa, Kind::kOpaque};
  std::vector<LayerBlob> blobs;
  for (size_t i = 0; i < w.layers.size(); ++i) {
    blobs.push_back({w.layers[i].first, kinds[i], w.layers[i].second});
  }
  PutOptions put;
  put.token_digest = DigestTokens(std::vector<uint32_t>{1, 2, 3, static_cast<uint32_t>(seed)}, 7);
  Status s = store.PutSnapshot(ns, w.prefix, 4, blobs, put);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (auto m = store.GetManifest(ns, w.prefix); m.ok()) w.put = m->put_id;
  return w;
}

inline void ExpectReadsBack(Store& store, const Written& w) {
  for (const auto& [layer, bytes] : w.layers) {
    auto got = store.GetLayer(w.ns, w.prefix, layer);
    ASSERT_TRUE(got.ok()) << w.prefix.ToHex() << " layer " << layer << ": "
                          << got.status().ToString();
    EXPECT_TRUE(*got == bytes) << w.prefix.ToHex() << " layer " << layer << " differs";
  }
}

}  // namespace auxstore::testing

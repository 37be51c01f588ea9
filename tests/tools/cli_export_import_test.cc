// export/import: a bit-exact round trip, and a hostile directory can neither
// read outside itself nor get anything written.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "auxstore/blob_hash.h"
#include "tests/tools/cli_test_util.h"
#include "tools/cli/export_import.h"

namespace auxstore::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ExportImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = OpenStore(dir_.Sub("src"));
    ns_ = store->RegisterNamespace(TestSpec()).value();
    snap_ = PutMixed(*store, ns_, 42, /*big=*/true);
    store.reset();
    CliRun r = RunBinary({"export", dir_.Sub("src"), snap_.prefix.ToHex(), exported()});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  std::string exported() const { return dir_.Sub("export"); }
  std::string dst() const { return dir_.Sub("dst"); }

  // A copy of the export to tamper with.
  std::string Copy(const std::string& name) {
    const std::string d = dir_.Sub(name);
    fs::copy(exported(), d);
    return d;
  }
  json Manifest(const std::string& d) {
    std::ifstream in(d + "/manifest.json");
    return json::parse(in);
  }
  void WriteManifest(const std::string& d, const json& j) {
    std::ofstream(d + "/manifest.json", std::ios::trunc) << j.dump();
  }

  // The import fails with `code` and a message containing `words`, and the
  // destination store holds nothing (not even the namespace).
  void ExpectRefused(const std::string& d, StatusCode code, const std::string& words,
                     std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"import", dst(), d, "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    CliRun r = RunBinary(args);
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_EQ(r.Json()["code"].get<std::string>(), StatusCodeName(code)) << r.out;
    EXPECT_NE(r.err.find(words), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dst())) << "the store was created or written";
  }

  TempDir dir_;
  NamespaceId ns_ = 0;
  Written snap_;
};

TEST_F(ExportImportTest, RoundTripIsBitExact) {
  auto m = Manifest(exported());
  EXPECT_EQ(m["prefix"].get<std::string>(), snap_.prefix.ToHex());
  ASSERT_EQ(m["layers"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(fs::file_size(exported() + "/" + m["layers"][i]["file"].get<std::string>()),
              snap_.layers[i].second.size());
  }
  CliRun r = RunBinary({"import", dst(), exported(), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(r.Json()["already_present"].get<bool>());
  {
    auto store = OpenStore(dst());
    ExpectReadsBack(*store, snap_);
    auto src = OpenStore(dir_.Sub("src"));
    auto a = src->GetManifest(ns_, snap_.prefix), b = store->GetManifest(ns_, snap_.prefix);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->token_count, b->token_count);
    EXPECT_EQ(a->token_digest, b->token_digest);
    ASSERT_EQ(a->layers.size(), b->layers.size());
    for (size_t i = 0; i < a->layers.size(); ++i) {  // chunking is the store's own
      EXPECT_EQ(a->layers[i].layer, b->layers[i].layer);
      EXPECT_EQ(a->layers[i].kind, b->layers[i].kind);
      EXPECT_EQ(a->layers[i].bytes, b->layers[i].bytes);
      EXPECT_EQ(a->layers[i].xxh3, b->layers[i].xxh3);
    }
    EXPECT_EQ(NamespaceFingerprint(*store->GetNamespace(ns_)), ns_);
    EXPECT_EQ(store->GetNamespace(ns_)->model_id, src->GetNamespace(ns_)->model_id);
  }
  CliRun again = RunInProcess({"import", dst(), exported(), "--json"});
  EXPECT_EQ(again.code, 0);
  EXPECT_TRUE(again.Json()["already_present"].get<bool>());
  // Export refuses to write into a non-empty directory.
  CliRun busy_dir = RunInProcess({"export", dir_.Sub("src"), snap_.prefix.ToHex(), exported()});
  EXPECT_EQ(busy_dir.code, 2);
  EXPECT_NE(busy_dir.err.find("not an empty directory"), std::string::npos);
}

TEST_F(ExportImportTest, RefusesASymlinkedLayerFile) {
  const std::string d = Copy("symlink");
  const std::string file = Manifest(d)["layers"][2]["file"];
  fs::rename(d + "/" + file, dir_.Sub("outside.bin"));
  fs::create_symlink(dir_.Sub("outside.bin"), d + "/" + file);
  ExpectRefused(d, StatusCode::kInvalidArgument, "symbolic link");
}

TEST_F(ExportImportTest, RefusesASymlinkedManifest) {
  const std::string d = Copy("symlink-manifest");
  fs::rename(d + "/manifest.json", dir_.Sub("m.json"));
  fs::create_symlink(dir_.Sub("m.json"), d + "/manifest.json");
  ExpectRefused(d, StatusCode::kInvalidArgument, "symbolic link");
}

TEST_F(ExportImportTest, RefusesNamesOutsideTheDirectory) {
  for (const std::string& bad : {std::string("../export/layer-2.bin"), std::string(".."),
                                 std::string("/etc/passwd"), std::string("sub/x")}) {
    const std::string d = Copy("names" + std::to_string(bad.size()));
    json m = Manifest(d);
    m["layers"][2]["file"] = bad;
    WriteManifest(d, m);
    ExpectRefused(d, StatusCode::kInvalidArgument, "layers[2].file");
  }
}

TEST_F(ExportImportTest, RefusesSizeMismatchOversizeAndBadHash) {
  {  // a file shorter than the manifest says
    const std::string d = Copy("short");
    const std::string file = d + "/" + Manifest(d)["layers"][2]["file"].get<std::string>();
    fs::resize_file(file, fs::file_size(file) - 1);
    ExpectRefused(d, StatusCode::kInvalidArgument, "bytes but the manifest says");
  }
  {  // a size no QSA layer of this geometry can have
    const std::string d = Copy("oversize");
    json m = Manifest(d);
    m["layers"][0]["bytes"] = 16 + 4096ull * 64 * 2 + 1;
    WriteManifest(d, m);
    ExpectRefused(d, StatusCode::kInvalidArgument, "more than a QSA layer can hold");
  }
  {  // opaque layers are bounded by --max-layer-bytes
    ExpectRefused(Copy("opaque-limit"), StatusCode::kInvalidArgument,
                  "more than a opaque layer can hold", {"--max-layer-bytes", "1000"});
  }
  {  // one flipped byte
    const std::string d = Copy("badhash");
    const std::string file = d + "/" + Manifest(d)["layers"][2]["file"].get<std::string>();
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');
    f.close();
    ExpectRefused(d, StatusCode::kCorruption, "XXH3 mismatch");
  }
  {  // a manifest over 1 MiB is not read
    const std::string d = Copy("huge-manifest");
    std::ofstream(d + "/manifest.json", std::ios::trunc) << std::string((1 << 20) + 1, ' ');
    ExpectRefused(d, StatusCode::kInvalidArgument, "over the 1048576-byte limit");
  }
  {  // a blob the codec rejects, with a matching hash
    const std::string d = Copy("codec");
    json m = Manifest(d);
    const std::string file = d + "/" + m["layers"][0]["file"].get<std::string>();
    std::vector<uint8_t> blob(fs::file_size(file));
    std::ifstream(file, std::ios::binary).read(reinterpret_cast<char*>(blob.data()), blob.size());
    blob[8] = 0xff;  // pooled: far more blocks than ingested tokens
    std::ofstream(file, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(blob.data()), blob.size());
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx",
                  static_cast<unsigned long long>(BlobHasher::Hash(blob)));
    m["layers"][0]["xxh3"] = hex;
    WriteManifest(d, m);
    ExpectRefused(d, StatusCode::kCorruption, "pools more than it holds");
  }
}

TEST_F(ExportImportTest, RefusesAFifoInsteadOfAFile) {
  const std::string d = Copy("fifo");
  const std::string file = d + "/" + Manifest(d)["layers"][1]["file"].get<std::string>();
  fs::remove(file);
  ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0);
  ExpectRefused(d, StatusCode::kInvalidArgument, "not a regular file");
}

}  // namespace
}  // namespace auxstore::testing

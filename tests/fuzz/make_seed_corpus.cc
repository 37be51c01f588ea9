// Writes the small seed corpora committed under tests/fuzz/corpus/<target>/:
// a few valid inputs per decoder (the fuzzers mutate from there).
//   fuzz_make_seed_corpus <corpus dir>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "auxstore/blob_codecs.h"
#include "format/envelope.h"
#include "format/manifest.h"
#ifdef AUXSTORE_HAVE_CLI
#include "tools/cli/import_manifest.h"
#endif

namespace {

void Write(const std::filesystem::path& dir, const std::string& name, const std::string& bytes) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << bytes;
}

std::string Str(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 1;
  }
  using namespace auxstore;
  const std::filesystem::path root = argv[1];
  const std::string key = "ns-prefix-layer-chunk-key";
  for (int i = 0; i < 3; ++i) {
    std::vector<uint8_t> payload(i * 37, static_cast<uint8_t>(i + 1));
    const std::string value =
        EncodeEnvelope(ByteSpan(reinterpret_cast<const uint8_t*>(key.data()), key.size()),
                       i == 2 ? RecordKind::kManifest : RecordKind::kOpaqueChunk, payload);
    Write(root / "fuzz_envelope", "valid-" + std::to_string(i),
          std::string(1, static_cast<char>(key.size())) + key + value);
  }
  // QSA: geometry bytes [hd-1][max_tokens lo][hi][ratio-1][head len lo][hi], then the blob.
  for (uint64_t ingested : {0, 3, 9}) {
    std::vector<uint8_t> keys(ingested * 4 * 2, 0x5a);
    auto blob = EncodeQsaBlob(ingested, ingested / 2, keys, 4).value();
    Write(root / "fuzz_qsa", "valid-" + std::to_string(ingested),
          std::string("\x03\x10\x00\x01\x10\x00", 6) + Str(blob));
  }
  // DSA: [d-1][capacity lo][hi], then the blob.
  for (uint64_t len : {0, 2, 5}) {
    std::vector<uint8_t> k(len * 4 * 2, 1), g(len * 4 * 2, 2), v(len, 1);
    auto blob = EncodeDsaBlob(len, 4, k, g, v).value();
    Write(root / "fuzz_dsa", "valid-" + std::to_string(len),
          std::string("\x03\x10\x00", 3) + Str(blob));
  }
  for (int i = 0; i < 3; ++i) {
    Manifest m;
    m.token_count = 100 + i;
    m.created_unix_ms = 1700000000000 + i;
    m.chunk_bytes = 4096;
    if (i == 1) m.token_digest = TokenDigest{};
    m.put_id = 0x77 + i;
    m.page_tokens = 4;
    for (int l = 0; l < i + 1; ++l) {
      const uint64_t rows = 50u * l + 13;  // >= the 3 pages of 4 rows layer 0 has
      const uint32_t layer = static_cast<uint32_t>(l * 2);
      switch (l % 3) {
        case 0: {  // QSA, pages 0-1 shared from another put, page 2 its own
          LayerEntry e{
              layer, Kind::kQsa, 16 + rows * 8, 0x1234u + l, std::vector<uint8_t>(16), rows,
              {8},   {}};
          e.runs = {{0x55, 0, 4096, 0, 2}, {m.put_id, 2, 4096, 2, 1}};
          m.layers.push_back(e);
          break;
        }
        case 1:
          m.layers.push_back({layer,
                              Kind::kDsa,
                              16 + rows * 21,
                              0x1234u + l,
                              std::vector<uint8_t>(16),
                              rows,
                              {16, 4, 1},
                              {}});
          break;
        default:
          m.layers.push_back({layer, Kind::kOpaque, rows, 0x1234u + l, {}, rows, {1}, {}});
      }
    }
    Write(root / "fuzz_manifest", "valid-" + std::to_string(i), EncodeManifest(m));
#ifdef AUXSTORE_HAVE_CLI
    NamespaceSpec spec;
    spec.model_id = "seed-model";
    spec.qsa = {4, 16, 2, 2, 10000.0f, 1e-6f};
    spec.dsa = {4, 16};
    for (auto& l : m.layers) l.bytes = l.kind == Kind::kQsa ? 16 : l.kind == Kind::kDsa ? 16 : 7;
    std::vector<std::string> files;
    std::vector<uint64_t> hashes;
    for (auto& l : m.layers) {
      files.push_back("layer-" + std::to_string(l.layer) + ".bin");
      hashes.push_back(l.xxh3);
    }
    Prefix prefix;
    prefix.bytes[0] = static_cast<uint8_t>(i);
    Write(root / "fuzz_import_manifest", "valid-" + std::to_string(i),
          cli::WriteExportManifest(NamespaceFingerprint(spec), spec, prefix, m, files, hashes));
#endif
  }
  return 0;
}

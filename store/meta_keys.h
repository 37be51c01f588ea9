// Names and encodings of the store's own records in the meta family.
#pragma once

#include <cstdint>
#include <string>

#include "auxstore/blob_codecs.h"
#include "auxstore/status.h"

namespace auxstore::store_internal {

inline constexpr const char* kFormatVersionKey = "format_version";
inline constexpr const char* kCommitSeqKey = "commit_seq";     // last committed manifest
inline constexpr const char* kQuarantinesKey = "quarantines";  // snapshots quarantined
// "intent/" + PutKey -> the snapshot key: records of an ingested put that may
// not be committed yet; the orphan sweep checks these instead of every record.
inline constexpr const char* kIntentPrefix = "intent/";
inline constexpr const char* kIngestDir = "ingest";  // SSTs being built, under the store dir

std::string EncodeMeta(const std::string& key, const std::string& payload);
std::string EncodeMetaU64(const std::string& key, uint64_t v);
Result<uint64_t> DecodeMetaU64(const std::string& key, const std::string& value);
Result<std::string> DecodeMeta(const std::string& key, ByteSpan value);

}  // namespace auxstore::store_internal

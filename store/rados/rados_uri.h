// RadosUri: the one string that configures the RADOS shared tier.
//
//   rados://POOL?conf=PATH&namespace=NS&user=NAME&keyring=PATH&op_timeout_ms=N
//
// POOL and conf are required; namespace (default: the pool's default, empty
// namespace), user (default admin, i.e. client.admin), keyring (default:
// whatever the conf names) and op_timeout_ms (default 10000) are optional.
// Values may be percent-encoded (%2F for '/', %26 for '&'). librados takes
// its timeouts in whole seconds, so op_timeout_ms must be a multiple of 1000;
// it bounds every call: connect (client_mount_timeout), monitor commands
// (rados_mon_op_timeout) and object operations (rados_osd_op_timeout).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "auxstore/status.h"

namespace auxstore::rados {

struct RadosUri {
  std::string pool;
  std::string conf_path;
  std::string ns;              // RADOS namespace inside the pool; empty = the default one
  std::string user = "admin";  // the client id, without "client."
  std::string keyring;         // empty: the conf's (none with auth none)
  uint32_t op_timeout_ms = 10000;

  // The canonical string (every parameter spelled out, percent-encoded).
  std::string ToString() const;
};

inline constexpr uint32_t kMaxOpTimeoutMs = 3'600'000;

// Parses `uri`; InvalidArgument naming the bad part when anything is wrong.
Result<RadosUri> ParseRadosUri(std::string_view uri);

}  // namespace auxstore::rados

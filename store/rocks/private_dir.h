// The store's private directories (the trash the deferred-delete wrapper
// moves files into, the ingest directory): owner-only whatever the umask.
#pragma once

#include <string>

#include "auxstore/status.h"

namespace auxstore::store_internal {

// mkdir `path` (0700 whatever the umask) unless it exists as a directory.
Status MakePrivateDir(const std::string& path);

}  // namespace auxstore::store_internal

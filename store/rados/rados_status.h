// How a librados return code becomes a Status.
#pragma once

#include <string_view>

#include "auxstore/status.h"

namespace auxstore::rados {

// `rc` is librados's negative errno (0 or positive: Ok). `op` says what was
// attempted ("read page p.1f..."), `pool` where. ETIMEDOUT (the configured
// op timeout ran out: every OSD or the monitors unreachable), ENOTCONN,
// ESHUTDOWN and ECONNREFUSED are Unavailable; ENOENT is NotFound; the rest
// IOError. EEXIST is a caller's business ("already stored") and maps to Busy
// only when it reaches here.
Status FromRados(int rc, std::string_view op, std::string_view pool);

}  // namespace auxstore::rados

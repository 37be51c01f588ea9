// auxstore_restore_options_t's fields every restore call shares (the
// stream, a row range) checked and converted; lease and callbacks are each
// call's own.
#pragma once

#include <cstddef>
#include <string>

#include "auxstore/c.h"
#include "auxstore/gpu_pipeline.h"

namespace auxstore::capi {

inline Status ToRestoreOptions(const auxstore_restore_options_t& options, RestoreOptions* o) {
  // Callers built before the row range pass the struct without it.
  constexpr size_t kWithoutRows = offsetof(auxstore_restore_options_t, use_rows);
  if (options.struct_size < kWithoutRows) {
    return Status::InvalidArgument("options->struct_size is " +
                                   std::to_string(options.struct_size) +
                                   ": call auxstore_restore_options_init first");
  }
  if (options.use_stream) {
    if (options.stream == 0) {
      return Status::InvalidArgument(
          "options->stream is 0, the legacy default stream, which a restore never uses");
    }
    o->stream = options.stream;
  }
  if (options.struct_size >= sizeof(auxstore_restore_options_t) && options.use_rows) {
    if (options.first_row > options.last_row) {
      return Status::InvalidArgument("options->first_row " + std::to_string(options.first_row) +
                                     " is after last_row " + std::to_string(options.last_row));
    }
    o->rows = RestoreOptions::Rows{options.first_row, options.last_row};
  }
  return Status::Ok();
}

}  // namespace auxstore::capi

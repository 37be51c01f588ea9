// auxstore_options_t: creation and the validated setters.
#include <new>
#include <string>

#include "auxstore/c.h"
#include "capi/c_errors.h"
#include "capi/c_handles.h"

using auxstore::Status;
using auxstore::capi::Guard;

namespace {

// Runs `set` on the options after the NULL check.
template <typename Set>
int Setter(const char* fn, auxstore_options_t* o, char** errmsg, Set&& set) noexcept {
  return Guard(fn, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto opts, auxstore::capi::Live(o, "options"));
    return set(opts->options);
  });
}

Status Boolean(int v, const char* what, bool* out) {
  if (v != 0 && v != 1) {
    return Status::InvalidArgument(std::string(what) + " is " + std::to_string(v) +
                                   ", must be 0 or 1");
  }
  *out = v == 1;
  return Status::Ok();
}

}  // namespace

extern "C" {

auxstore_options_t* auxstore_options_create(void) {
  try {
    return auxstore::capi::NewHandle(std::make_shared<auxstore_options_t>());
  } catch (...) {  // out of memory
    return nullptr;
  }
}

void auxstore_options_destroy(auxstore_options_t* options) {
  if (options == nullptr) return;
  try {
    if (auxstore::capi::Take(options) == nullptr) {
      auxstore::capi::ReportMisuse(__func__, options, auxstore::capi::HandleKind::kOptions);
    }
  } catch (...) {  // out of memory for the warning: nothing to do
  }
}

int auxstore_options_set_capacity_bytes(auxstore_options_t* o, uint64_t bytes, char** errmsg) {
  return Setter(__func__, o, errmsg, [&](auxstore::Options& opt) {
    opt.capacity_bytes = bytes;
    return Status::Ok();
  });
}

int auxstore_options_set_ttl_seconds(auxstore_options_t* o, uint64_t seconds, char** errmsg) {
  return Setter(__func__, o, errmsg, [&](auxstore::Options& opt) {
    opt.ttl_seconds = seconds;
    return Status::Ok();
  });
}

int auxstore_options_set_chunk_bytes(auxstore_options_t* o, uint32_t bytes, char** errmsg) {
  return Setter(__func__, o, errmsg, [&](auxstore::Options& opt) {
    if (bytes == 0) return Status::InvalidArgument("chunk bytes is 0, must be > 0");
    opt.chunk_bytes = bytes;
    return Status::Ok();
  });
}

int auxstore_options_set_read_lanes(auxstore_options_t* o, uint32_t lanes, char** errmsg) {
  return Setter(__func__, o, errmsg, [&](auxstore::Options& opt) {
    if (lanes > auxstore::Options::kMaxReadLanes) {
      return Status::InvalidArgument("read lanes is " + std::to_string(lanes) + ", at most " +
                                     std::to_string(auxstore::Options::kMaxReadLanes));
    }
    opt.read_lanes = lanes;
    return Status::Ok();
  });
}

int auxstore_options_set_durability(auxstore_options_t* o, int durability, char** errmsg) {
  return Setter(__func__, o, errmsg, [&](auxstore::Options& opt) {
    if (durability != AUXSTORE_SYNC && durability != AUXSTORE_ASYNC) {
      return Status::InvalidArgument("durability " + std::to_string(durability) +
                                     " is neither AUXSTORE_SYNC (0) nor AUXSTORE_ASYNC (1)");
    }
    opt.durability =
        durability == AUXSTORE_SYNC ? auxstore::Durability::kSync : auxstore::Durability::kAsync;
    return Status::Ok();
  });
}

int auxstore_options_set_read_only(auxstore_options_t* o, int read_only, char** errmsg) {
  return Setter(__func__, o, errmsg, [&](auxstore::Options& opt) {
    return Boolean(read_only, "read_only", &opt.read_only);
  });
}

int auxstore_options_set_create_if_missing(auxstore_options_t* o, int create, char** errmsg) {
  return Setter(__func__, o, errmsg, [&](auxstore::Options& opt) {
    return Boolean(create, "create_if_missing", &opt.create_if_missing);
  });
}

int auxstore_options_set_shared(auxstore_options_t* o, const char* uri, int write_mode,
                                uint64_t queue_bytes, int shed_when_full, char** errmsg) {
  return Setter(__func__, o, errmsg, [&](auxstore::Options& opt) -> Status {
    if (write_mode != AUXSTORE_SHARED_THROUGH && write_mode != AUXSTORE_SHARED_BEHIND) {
      return Status::InvalidArgument("write_mode " + std::to_string(write_mode) +
                                     " is neither AUXSTORE_SHARED_THROUGH (0) nor "
                                     "AUXSTORE_SHARED_BEHIND (1)");
    }
    if (queue_bytes == 0) return Status::InvalidArgument("queue_bytes is 0, must be > 0");
    bool shed = false;
    AUXSTORE_RETURN_IF_ERROR(Boolean(shed_when_full, "shed_when_full", &shed));
    opt.shared = uri == nullptr ? "" : uri;
    opt.shared_write = write_mode == AUXSTORE_SHARED_THROUGH ? auxstore::SharedWrite::kThrough
                                                             : auxstore::SharedWrite::kBehind;
    opt.shared_queue_bytes = queue_bytes;
    opt.shared_shed_when_full = shed;
    return Status::Ok();
  });
}

int auxstore_options_set_shared_local_copies(auxstore_options_t* o, int local_copies,
                                             char** errmsg) {
  return Setter(__func__, o, errmsg, [&](auxstore::Options& opt) {
    return Boolean(local_copies, "local_copies", &opt.shared_local_copies);
  });
}

int auxstore_options_set_log_callback(auxstore_options_t* options, auxstore_log_fn fn, void* arg,
                                      int min_level, char** errmsg) {
  return Setter(__func__, options, errmsg, [&](auxstore::Options& o) -> Status {
    if (min_level < AUXSTORE_LOG_DEBUG || min_level > AUXSTORE_LOG_ERROR) {
      return Status::InvalidArgument("min_level " + std::to_string(min_level) +
                                     " is not AUXSTORE_LOG_DEBUG..AUXSTORE_LOG_ERROR (0..3)");
    }
    o.log_level = static_cast<auxstore::LogLevel>(min_level);
    if (fn == nullptr) {
      o.log_sink = nullptr;
      return Status::Ok();
    }
    o.log_sink = [fn, arg](const auxstore::LogRecord& r) {
      const std::string source(r.source), message(r.message);  // NUL-terminated copies
      fn(arg, static_cast<int>(r.level), source.c_str(), message.c_str());
    };
    return Status::Ok();
  });
}

}  // extern "C"

// The process-wide handle table behind every C handle.
#include "capi/c_registry.h"

#include <atomic>
#include <mutex>
#include <vector>

#include "auxstore/c.h"
#include "auxstore/log.h"

namespace auxstore::capi {
namespace {

static_assert(sizeof(uintptr_t) == sizeof(uint64_t), "handles are 64-bit tokens");

// token = generation << 32 | (slot + 1): never 0, and never a small integer
// (generations start at 1).
class HandleTable {
 public:
  uint64_t Insert(HandleKind kind, std::shared_ptr<void> object) {
    std::lock_guard lock(mu_);
    uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = static_cast<uint32_t>(slots_.size());
      slots_.emplace_back();
    }
    Slot& s = slots_[slot];
    s.kind = kind;
    s.object = std::move(object);
    return uint64_t{s.generation} << 32 | (uint64_t{slot} + 1);
  }

  std::shared_ptr<void> Find(uint64_t token, HandleKind kind) {
    std::lock_guard lock(mu_);
    Slot* s = Lookup(token, kind);
    return s != nullptr ? s->object : nullptr;
  }

  std::shared_ptr<void> Take(uint64_t token, HandleKind kind) {
    std::shared_ptr<void> out;
    {
      std::lock_guard lock(mu_);
      Slot* s = Lookup(token, kind);
      if (s == nullptr) return nullptr;
      out = std::move(s->object);
      s->object.reset();
      // A generation that wraps to 0 skips it: a token is never < 2^32.
      if (++s->generation == 0) s->generation = 1;
      free_.push_back(static_cast<uint32_t>((token & 0xffffffffu) - 1));
    }
    return out;  // destroyed (if last) by the caller, outside the lock
  }

 private:
  struct Slot {
    uint32_t generation = 1;
    HandleKind kind = HandleKind::kOptions;
    std::shared_ptr<void> object;  // null while the slot is free
  };

  Slot* Lookup(uint64_t token, HandleKind kind) {
    const uint64_t index = token & 0xffffffffu;
    const uint64_t generation = token >> 32;
    if (index == 0 || index > slots_.size()) return nullptr;
    Slot& s = slots_[index - 1];
    if (s.object == nullptr || s.generation != generation || s.kind != kind) return nullptr;
    return &s;
  }

  std::mutex mu_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
};

// Never destroyed: handles may be released from other static destructors
// (a binding's finalizers) at process exit.
HandleTable& Table() {
  static HandleTable* table = new HandleTable;
  return *table;
}

std::atomic<uint64_t> g_misuse{0};

}  // namespace

const char* HandleKindName(HandleKind kind) {
  switch (kind) {
    case HandleKind::kOptions:
      return "auxstore_options_t";
    case HandleKind::kStore:
      return "auxstore_t";
    case HandleKind::kBackend:
      return "auxstore_backend_t";
    case HandleKind::kState:
      return "auxstore_state_t";
    case HandleKind::kPipeline:
      return "auxstore_pipeline_t";
    case HandleKind::kRestore:
      return "auxstore_restore_handle_t";
    case HandleKind::kHostBuffer:
      return "auxstore_host_buffer_t";
    case HandleKind::kHostRead:
      return "auxstore_host_read_t";
    case HandleKind::kRestoreBatch:
      return "auxstore_restore_batch_t";
  }
  return "auxstore handle";
}

uint64_t InsertHandle(HandleKind kind, std::shared_ptr<void> object) {
  return Table().Insert(kind, std::move(object));
}

std::shared_ptr<void> FindHandle(uint64_t token, HandleKind kind) {
  return Table().Find(token, kind);
}

std::shared_ptr<void> TakeHandle(uint64_t token, HandleKind kind) {
  return Table().Take(token, kind);
}

std::string NotLiveMessage(const char* name, HandleKind kind) {
  return std::string(name) + " is not a live " + HandleKindName(kind) +
         " handle (already closed or released, or never created)";
}

void ReportMisuse(const char* fn, const void* handle, HandleKind kind) {
  (void)handle;
  g_misuse.fetch_add(1, std::memory_order_relaxed);
  const std::string message = std::string(fn) + ": ignored: " + NotLiveMessage("the handle", kind);
  LogToStderrOnce({LogLevel::kWarn, "auxstore", message});
}

}  // namespace auxstore::capi

extern "C" uint64_t auxstore_misuse_count(void) {
  return auxstore::capi::g_misuse.load(std::memory_order_relaxed);
}

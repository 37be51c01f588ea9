// Many snapshots restored into device states with one handle (issue 24,
// docs/connectors.md: vLLM's start_load_kv of a step's requests,
// wait_for_layer_load, get_finished): every snapshot checked and its targets
// claimed first, then one pipeline restore per snapshot, all running at
// once; per-snapshot and per-layer completion by index.
#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "auxstore/c.h"
#include "capi/c_convert.h"
#include "capi/c_errors.h"
#include "capi/c_handles.h"
#include "capi/c_restore_options.h"
#include "capi/c_restore_targets.h"

using auxstore::Status;
using auxstore::capi::Guard;
using auxstore::capi::Live;
using auxstore::capi::NotNull;

struct auxstore_restore_batch_t {
  std::shared_ptr<auxstore_pipeline_t> pipeline;                   // kept until the handle goes
  std::vector<std::shared_ptr<auxstore::RestoreHandle>> restores;  // i: snapshots[i]
  std::mutex mu;
  std::vector<bool> reported;  // under mu: given by _finished
};

namespace auxstore::capi {
template <>
struct HandleTraits<auxstore_restore_batch_t> {
  static constexpr HandleKind kind = HandleKind::kRestoreBatch;
};
}  // namespace auxstore::capi

namespace {

std::string SnapshotName(size_t i) { return "snapshots[" + std::to_string(i) + "]"; }

Status CheckOptions(const auxstore_restore_options_t* options, auxstore::RestoreOptions* o) {
  if (options == nullptr) return Status::Ok();
  AUXSTORE_RETURN_IF_ERROR(auxstore::capi::ToRestoreOptions(*options, o));
  if (options->lease != 0 || options->on_layer != nullptr || options->done != nullptr) {
    return Status::InvalidArgument(
        "options->lease, on_layer and done are per restore: a batch takes each snapshot's "
        "lease in auxstore_restore_snapshot_t and reports completion by index");
  }
  return Status::Ok();
}

// No state in two snapshots (each layer of each snapshot needs its own).
Status CheckDistinctStates(const auxstore_restore_snapshot_t* snapshots, size_t n) {
  std::map<const auxstore_state_t*, std::string> seen;
  for (size_t i = 0; i < n; ++i) {
    const auxstore_restore_snapshot_t& s = snapshots[i];
    for (size_t k = 0; s.targets != nullptr && k < s.n_targets; ++k) {
      const auxstore_state_t* state = s.targets[k].state;
      const std::string name = SnapshotName(i) + ".targets[" + std::to_string(k) + "].state";
      if (state == nullptr) continue;  // ToTargets names it
      const auto [it, fresh] = seen.emplace(state, name);
      if (!fresh && it->second.rfind(SnapshotName(i) + ".", 0) != 0) {
        return Status::InvalidArgument(name + " is " + it->second +
                                       " too: each layer needs its own state");
      }
    }
  }
  return Status::Ok();
}

// The live batch and snapshot index i of it.
auxstore::Result<std::shared_ptr<auxstore_restore_batch_t>> LiveAt(
    const auxstore_restore_batch_t* batch, size_t i) {
  AUXSTORE_ASSIGN_OR_RETURN(auto b, Live(batch, "batch"));
  if (i >= b->restores.size()) {
    return Status::InvalidArgument("i = " + std::to_string(i) + ": the batch has " +
                                   std::to_string(b->restores.size()) + " snapshots");
  }
  return b;
}

}  // namespace

extern "C" {

int auxstore_restore_batch_start(auxstore_pipeline_t* pipeline,
                                 const auxstore_restore_snapshot_t* snapshots, size_t n,
                                 const auxstore_restore_options_t* options,
                                 auxstore_restore_batch_t** out, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(auto p, Live(pipeline, "pipeline"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(out, "out"));
    if (n > 0) AUXSTORE_RETURN_IF_ERROR(NotNull(snapshots, "snapshots"));
    auxstore::RestoreOptions common;
    AUXSTORE_RETURN_IF_ERROR(CheckOptions(options, &common));
    AUXSTORE_RETURN_IF_ERROR(CheckDistinctStates(snapshots, n));
    // Every snapshot's targets claimed before any restore starts; on a
    // refusal the claims made so far go with `targets`.
    std::vector<auxstore::capi::Targets> targets(n);
    for (size_t i = 0; i < n; ++i) {
      const auxstore_restore_snapshot_t& s = snapshots[i];
      Status st = auxstore::capi::ToTargets(*p, s.targets, s.n_targets, &targets[i]);
      if (!st.ok()) return st.WithContext(SnapshotName(i));
    }
    auto batch = std::make_shared<auxstore_restore_batch_t>();
    batch->pipeline = p;
    batch->reported.assign(n, false);
    for (size_t i = 0; i < n; ++i) {
      auxstore::RestoreOptions o = common;
      o.lease = snapshots[i].lease;
      auto h =
          p->pipeline->StartRestore(snapshots[i].ns, auxstore::capi::ToPrefix(snapshots[i].prefix),
                                    std::move(targets[i].map), o, targets[i].claims.Wrap({}));
      targets[i].claims.Started(h);
      batch->restores.push_back(std::move(h));
    }
    *out = auxstore::capi::NewHandle(std::move(batch));
    return Status::Ok();
  });
}

int auxstore_restore_batch_poll(const auxstore_restore_batch_t* batch) {
  const auto b = auxstore::capi::FindLive(batch);
  if (b == nullptr) return -1;
  return std::all_of(b->restores.begin(), b->restores.end(),
                     [](const auto& r) { return r->done(); })
             ? 1
             : 0;
}

int auxstore_restore_batch_snapshot_done(const auxstore_restore_batch_t* batch, size_t i) {
  const auto b = auxstore::capi::FindLive(batch);
  if (b == nullptr || i >= b->restores.size()) return -1;
  return b->restores[i]->done() ? 1 : 0;
}

int auxstore_restore_batch_layer_done(const auxstore_restore_batch_t* batch, size_t i,
                                      uint32_t layer) {
  const auto b = auxstore::capi::FindLive(batch);
  if (b == nullptr || i >= b->restores.size()) return -1;
  return b->restores[i]->LayerDone(layer) ? 1 : 0;
}

int auxstore_restore_batch_wait_snapshot(auxstore_restore_batch_t* batch, size_t i, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto b, LiveAt(batch, i));
    const Status st = b->restores[i]->Wait();
    return st.ok() ? st : st.WithContext(SnapshotName(i));
  });
}

int auxstore_restore_batch_wait_layer(auxstore_restore_batch_t* batch, size_t i, uint32_t layer,
                                      char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto b, LiveAt(batch, i));
    const Status st = b->restores[i]->WaitLayer(layer);
    return st.ok() ? st : st.WithContext(SnapshotName(i));
  });
}

int auxstore_restore_batch_wait(auxstore_restore_batch_t* batch, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto b, Live(batch, "batch"));
    Status first;
    for (size_t i = 0; i < b->restores.size(); ++i) {
      const Status st = b->restores[i]->Wait();
      if (!st.ok() && first.ok()) first = st.WithContext(SnapshotName(i));
    }
    return first;
  });
}

int auxstore_restore_batch_finished(auxstore_restore_batch_t* batch, size_t* indices,
                                    size_t capacity, size_t* n, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto b, Live(batch, "batch"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(n, "n"));
    if (capacity > 0) AUXSTORE_RETURN_IF_ERROR(NotNull(indices, "indices"));
    std::lock_guard lock(b->mu);
    size_t count = 0;
    for (size_t i = 0; i < b->restores.size() && count < capacity; ++i) {
      if (b->reported[i] || !b->restores[i]->done()) continue;
      b->reported[i] = true;
      indices[count++] = i;
    }
    *n = count;
    return Status::Ok();
  });
}

void auxstore_restore_batch_cancel(auxstore_restore_batch_t* batch) {
  if (batch == nullptr) return;
  try {
    if (const auto b = auxstore::capi::FindLive(batch)) {
      for (const auto& r : b->restores) r->Cancel();
    } else {
      auxstore::capi::ReportMisuse(__func__, batch, auxstore::capi::HandleKind::kRestoreBatch);
    }
  } catch (...) {  // out of memory for the warning: nothing to do
  }
}

void auxstore_restore_batch_release(auxstore_restore_batch_t* batch) {
  if (batch == nullptr) return;
  try {
    if (auxstore::capi::Take(batch) == nullptr) {
      auxstore::capi::ReportMisuse(__func__, batch, auxstore::capi::HandleKind::kRestoreBatch);
    }
  } catch (...) {  // out of memory for the warning: nothing to do
  }
}

}  // extern "C"

// Restore pipelines through the C ABI: store snapshots into device states.
#include <algorithm>
#include <string>

#include "auxstore/c.h"
#include "capi/c_convert.h"
#include "capi/c_errors.h"
#include "capi/c_handles.h"

using auxstore::Status;
using auxstore::capi::Guard;
using auxstore::capi::NotNull;

namespace {

// Checks the C targets and maps them by layer.
Status ToTargets(const auxstore_pipeline_t* p, const auxstore_restore_target_t* targets, size_t n,
                 auxstore::RestoreTargets* out) {
  if (n == 0) return Status::InvalidArgument("no restore targets (n is 0)");
  AUXSTORE_RETURN_IF_ERROR(NotNull(targets, "targets"));
  for (size_t i = 0; i < n; ++i) {
    const std::string at = "targets[" + std::to_string(i) + "]";
    const auxstore_state_t* s = targets[i].state;
    if (s == nullptr) return Status::InvalidArgument(at + ".state is NULL");
    if (s->backend != p->backend) {
      return Status::InvalidArgument(at + ".state lives on another backend than the pipeline's");
    }
    if (!out->emplace(targets[i].layer, s->state.get()).second) {
      return Status::InvalidArgument(at + ".layer " + std::to_string(targets[i].layer) +
                                     " repeats an earlier target's layer");
    }
  }
  return Status::Ok();
}

Status CheckRestore(const auxstore_pipeline_t* p, const uint8_t* prefix,
                    const auxstore_restore_target_t* targets, size_t n,
                    auxstore::RestoreTargets* out) {
  AUXSTORE_RETURN_IF_ERROR(NotNull(p, "pipeline"));
  AUXSTORE_RETURN_IF_ERROR(NotNull(prefix, "prefix"));
  return ToTargets(p, targets, n, out);
}

}  // namespace

extern "C" {

int auxstore_pipeline_create(auxstore_t* db, auxstore_backend_t* backend, auxstore_pipeline_t** out,
                             char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_RETURN_IF_ERROR(NotNull(db, "db"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(backend, "backend"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(out, "out"));
    auxstore::PipelineOptions options;
    // A staging buffer must hold one store chunk.
    options.staging_bytes = std::max<size_t>(options.staging_bytes, db->options.chunk_bytes);
    AUXSTORE_ASSIGN_OR_RETURN(auto pipeline,
                              auxstore::GpuPipeline::Create(*db->store, *backend->gpu, options));
    auto p = std::make_unique<auxstore_pipeline_t>();
    p->backend = backend;
    p->pipeline = std::move(pipeline);
    *out = p.release();
    return Status::Ok();
  });
}

void auxstore_pipeline_destroy(auxstore_pipeline_t* pipeline) { delete pipeline; }

int auxstore_restore(auxstore_pipeline_t* pipeline, uint64_t ns, const uint8_t prefix[16],
                     const auxstore_restore_target_t* targets, size_t n,
                     auxstore_restore_done_fn done, void* arg, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    auxstore::RestoreTargets map;
    AUXSTORE_RETURN_IF_ERROR(CheckRestore(pipeline, prefix, targets, n, &map));
    AUXSTORE_RETURN_IF_ERROR(NotNull(reinterpret_cast<const void*>(done), "done"));
    pipeline->pipeline->Restore(ns, auxstore::capi::ToPrefix(prefix), std::move(map),
                                auxstore::kDefaultStream, [done, arg](Status st) {
                                  done(arg, static_cast<int>(st.code()),
                                       st.ok() ? nullptr : st.message().c_str());
                                });
    return Status::Ok();
  });
}

int auxstore_restore_wait(auxstore_pipeline_t* pipeline, uint64_t ns, const uint8_t prefix[16],
                          const auxstore_restore_target_t* targets, size_t n, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    auxstore::RestoreTargets map;
    AUXSTORE_RETURN_IF_ERROR(CheckRestore(pipeline, prefix, targets, n, &map));
    return pipeline->pipeline
        ->Restore(ns, auxstore::capi::ToPrefix(prefix), std::move(map), auxstore::kDefaultStream)
        .get();
  });
}

}  // extern "C"

// Restore targets through the C ABI: checked and claimed (marked as a
// restore's targets until it is done), shared by the single restores
// (c_pipeline.cc) and the batched ones (c_restore_batch.cc).
#pragma once

#include <memory>
#include <string>

#include "auxstore/c.h"
#include "capi/c_errors.h"
#include "capi/c_handles.h"
#include "capi/c_state_use.h"

namespace auxstore::capi {

// Restore targets checked and claimed (marked as a restore's targets until
// it is done), mapped by layer.
struct Targets {
  auxstore::RestoreTargets map;
  RestoreClaims claims;
};

inline auxstore::Status ToTargets(const auxstore_pipeline_t& p,
                                  const auxstore_restore_target_t* targets, size_t n,
                                  Targets* out) {
  if (n == 0) return auxstore::Status::InvalidArgument("no restore targets (n is 0)");
  AUXSTORE_RETURN_IF_ERROR(NotNull(targets, "targets"));
  for (size_t i = 0; i < n; ++i) {
    const std::string at = "targets[" + std::to_string(i) + "]";
    for (size_t j = 0; j < i; ++j) {
      if (targets[j].state == targets[i].state && targets[i].state != nullptr) {
        return auxstore::Status::InvalidArgument(at + ".state is targets[" + std::to_string(j) +
                                                 "].state too: each layer needs its own state");
      }
    }
    std::shared_ptr<auxstore_state_t> s;
    AUXSTORE_RETURN_IF_ERROR(out->claims.Add(targets[i].state, at + ".state", &s));
    if (s->backend != p.backend) {
      return auxstore::Status::InvalidArgument(
          at + ".state lives on another backend than the pipeline's");
    }
    if (!out->map.emplace(targets[i].layer, s->state.get()).second) {
      return auxstore::Status::InvalidArgument(at + ".layer " + std::to_string(targets[i].layer) +
                                               " repeats an earlier target's layer");
    }
  }
  return auxstore::Status::Ok();
}

inline auxstore::Result<std::shared_ptr<auxstore_pipeline_t>> CheckRestore(
    const auxstore_pipeline_t* pipeline, const uint8_t* prefix,
    const auxstore_restore_target_t* targets, size_t n, Targets* out) {
  AUXSTORE_ASSIGN_OR_RETURN(auto p, Live(pipeline, "pipeline"));
  AUXSTORE_RETURN_IF_ERROR(NotNull(prefix, "prefix"));
  AUXSTORE_RETURN_IF_ERROR(ToTargets(*p, targets, n, out));
  return p;
}

}  // namespace auxstore::capi

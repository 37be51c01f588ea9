// SeqState::Restore: the whole-blob restore every state shares.
#include "auxstore/seq_state.h"

#include <algorithm>

namespace auxstore {

Status SeqState::Restore(ByteSpan blob, StreamHandle stream) {
  const ByteSpan head = blob.first(std::min(head_bytes(), blob.size()));
  AUXSTORE_ASSIGN_OR_RETURN(RestorePlan plan, PlanRestore(head, blob.size()));
  for (const BlobSegment& seg : plan.segments) {
    AUXSTORE_RETURN_IF_ERROR(gpu_->CopyH2DAsync(blob.subspan(seg.blob_offset, seg.bytes),
                                                seg.device, seg.device_offset, stream));
  }
  AUXSTORE_RETURN_IF_ERROR(FinishRestore(plan, stream));
  CommitRestore(plan);  // last: a failure above left the counters alone
  return Status::Ok();
}

}  // namespace auxstore

// SeqState::Restore, the whole-blob restore every state shares, and the
// cut of a restore plan to a row range.
#include "auxstore/seq_state.h"

#include <algorithm>
#include <string>
#include <vector>

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

Result<RestorePlan> SeqState::PlanRestoreRows(ByteSpan, uint64_t, uint64_t, uint64_t) const {
  return Status::InvalidArgument(std::string(KindName(kind())) +
                                 " state: a row range restores only QSA and DSA layers");
}

Status SeqState::CutToRows(RestorePlan* plan, uint64_t rows, uint64_t first, uint64_t last) {
  if (first > last || last > plan->count) {
    return Status::InvalidArgument("rows [" + std::to_string(first) + ", " + std::to_string(last) +
                                   ") are not within the snapshot's " +
                                   std::to_string(plan->count) + " rows");
  }
  if (rows != first) {
    return Status::InvalidArgument("the target holds " + std::to_string(rows) +
                                   " rows; restoring rows [" + std::to_string(first) + ", " +
                                   std::to_string(last) + ") needs it to hold exactly " +
                                   std::to_string(first));
  }
  for (BlobSegment& seg : plan->segments) {
    const uint64_t row = seg.bytes / plan->count;  // every array: count equal rows
    seg.blob_offset += first * row;
    seg.device_offset += first * row;
    seg.bytes = (last - first) * row;
  }
  std::erase_if(plan->segments, [](const BlobSegment& seg) { return seg.bytes == 0; });
  plan->count = last;
  return Status::Ok();
}

}  // namespace auxstore

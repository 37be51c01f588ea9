#include "gpu/host_backend.h"

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpu/qsa_block_pool_args.h"
#include "gpu/qsa_block_pool_ref.h"

namespace auxstore::gpu {

struct HostBackend::Event {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded = 0;   // generations recorded
  uint64_t completed = 0;  // highest generation reached by its stream
};

HostBackend::HostBackend(HostBackendOptions options) : options_(options) {
  streams_[kDefaultStream] = std::make_shared<HostStream>(options_.op_delay);
}

HostBackend::~HostBackend() {
  SynchronizeAll();
  {
    std::lock_guard lock(mu_);
    streams_.clear();  // joins the threads
    pinned_.clear();
  }
  (void)allocs_.TakeAll();  // the heap frees every block with itself
}

// ---- memory ------------------------------------------------------------------

namespace {

// Sizes the heap can never hand out are refused before any rounding.
Status CheckAllocSize(const char* what, size_t bytes) {
  if (bytes == 0) return Status::InvalidArgument(std::string(what) + " of 0 bytes");
  if (bytes > ResidentHeap::kMaxBytes) {
    return Status::InvalidArgument(std::string(what) + " of " + std::to_string(bytes) +
                                   " bytes: more than the host backend's largest block, " +
                                   std::to_string(ResidentHeap::kMaxBytes) + " bytes");
  }
  return Status::Ok();
}

}  // namespace

Result<DevicePtr> HostBackend::Alloc(size_t bytes) {
  AUXSTORE_RETURN_IF_ERROR(CheckAllocSize("Alloc", bytes));
  uint8_t* p = heap_.Allocate(bytes);
  if (p == nullptr)
    return Status::OutOfRange("host backend: out of memory for " + std::to_string(bytes) +
                              " bytes");
  const auto ptr = reinterpret_cast<DevicePtr>(p);
  allocs_.Insert(ptr, bytes);
  return ptr;
}

Status HostBackend::Free(DevicePtr ptr) {
  if (ptr == kNullDevicePtr) return Status::Ok();
  SynchronizeAll();  // cudaFree waits for the device too
  AUXSTORE_ASSIGN_OR_RETURN(uint64_t bytes, allocs_.Erase(ptr));
  (void)bytes;
  (void)heap_.Free(reinterpret_cast<uint8_t*>(ptr));
  return Status::Ok();
}

Result<uint8_t*> HostBackend::AllocPinned(size_t bytes) {
  AUXSTORE_RETURN_IF_ERROR(CheckAllocSize("AllocPinned", bytes));
  uint8_t* p = heap_.Allocate(bytes);
  if (p == nullptr) return Status::OutOfRange("host backend: out of pinned memory");
  std::lock_guard lock(mu_);
  pinned_[p] = Pinned{bytes, 0, false};
  return p;
}

Status HostBackend::FreePinned(uint8_t* ptr) {
  if (ptr == nullptr) return Status::Ok();
  std::lock_guard lock(mu_);
  auto it = pinned_.find(ptr);
  if (it == pinned_.end() || it->second.free_deferred) {
    return Status::InvalidArgument("FreePinned of a pointer AllocPinned did not return");
  }
  if (it->second.in_flight > 0) {
    // A real GPU would read freed memory; report it and free when the copy ends.
    ++pinned_misuse_;
    it->second.free_deferred = true;
    return Status::Internal("pinned buffer freed while a copy using it is still pending");
  }
  (void)heap_.Free(ptr);
  pinned_.erase(it);
  return Status::Ok();
}

std::function<void()> HostBackend::PinUse(const uint8_t* p, size_t n) {
  std::lock_guard lock(mu_);
  auto it = pinned_.upper_bound(p);
  if (it == pinned_.begin()) return [] {};
  --it;
  if (p + n > it->first + it->second.bytes) return [] {};
  ++it->second.in_flight;
  const uint8_t* base = it->first;
  return [this, base] {
    std::lock_guard l(mu_);
    auto e = pinned_.find(base);
    if (e == pinned_.end()) return;
    if (--e->second.in_flight == 0 && e->second.free_deferred) {
      (void)heap_.Free(const_cast<uint8_t*>(base));
      pinned_.erase(e);
    }
  };
}

uint64_t HostBackend::pinned_misuse_count() const {
  std::lock_guard lock(mu_);
  return pinned_misuse_;
}

size_t HostBackend::live_pinned() const {
  std::lock_guard lock(mu_);
  return pinned_.size();
}

// ---- streams and events --------------------------------------------------------

Result<std::shared_ptr<HostStream>> HostBackend::GetStream(StreamHandle stream) const {
  std::lock_guard lock(mu_);
  auto it = streams_.find(stream);
  if (it == streams_.end())
    return Status::InvalidArgument("unknown stream " + std::to_string(stream));
  return it->second;
}

Result<std::shared_ptr<HostBackend::Event>> HostBackend::GetEvent(EventHandle event) const {
  std::lock_guard lock(mu_);
  auto it = events_.find(event);
  if (it == events_.end()) return Status::InvalidArgument("unknown event " + std::to_string(event));
  return it->second;
}

void HostBackend::SynchronizeAll() {
  std::vector<std::shared_ptr<HostStream>> all;
  {
    std::lock_guard lock(mu_);
    for (auto& [h, s] : streams_) all.push_back(s);
  }
  for (auto& s : all) s->Wait();
}

Result<StreamHandle> HostBackend::CreateStream() {
  auto s = std::make_shared<HostStream>(options_.op_delay);
  std::lock_guard lock(mu_);
  const StreamHandle h = next_handle_++;
  streams_[h] = std::move(s);
  return h;
}

Status HostBackend::DestroyStream(StreamHandle stream) {
  if (stream == kDefaultStream) return Status::InvalidArgument("the default stream is permanent");
  std::shared_ptr<HostStream> s;
  {
    std::lock_guard lock(mu_);
    auto it = streams_.find(stream);
    if (it == streams_.end()) return Status::InvalidArgument("unknown stream");
    s = std::move(it->second);
    streams_.erase(it);
  }
  s->Wait();
  return Status::Ok();  // the thread joins when the last reference goes
}

Status HostBackend::Synchronize(StreamHandle stream) {
  AUXSTORE_ASSIGN_OR_RETURN(auto s, GetStream(stream));
  s->Wait();
  return s->sticky_error();
}

Status HostBackend::SetStreamDelay(StreamHandle stream, std::chrono::microseconds delay) {
  AUXSTORE_ASSIGN_OR_RETURN(auto s, GetStream(stream));
  s->set_delay(delay);
  return Status::Ok();
}

Result<EventHandle> HostBackend::CreateEvent() {
  std::lock_guard lock(mu_);
  const EventHandle h = next_handle_++;
  events_[h] = std::make_shared<Event>();
  return h;
}

Status HostBackend::DestroyEvent(EventHandle event) {
  std::lock_guard lock(mu_);
  if (events_.erase(event) == 0) return Status::InvalidArgument("unknown event");
  return Status::Ok();  // pending stream ops hold their own reference
}

Status HostBackend::RecordEvent(EventHandle event, StreamHandle stream) {
  AUXSTORE_ASSIGN_OR_RETURN(auto e, GetEvent(event));
  AUXSTORE_ASSIGN_OR_RETURN(auto s, GetStream(stream));
  uint64_t gen;
  {
    std::lock_guard lock(e->mu);
    gen = ++e->recorded;
  }
  s->Enqueue([e, gen] {
    {
      std::lock_guard lock(e->mu);
      if (gen > e->completed) e->completed = gen;
    }
    e->cv.notify_all();
    return Status::Ok();
  });
  return Status::Ok();
}

Result<bool> HostBackend::QueryEvent(EventHandle event) {
  AUXSTORE_ASSIGN_OR_RETURN(auto e, GetEvent(event));
  std::lock_guard lock(e->mu);
  return e->completed >= e->recorded;
}

Status HostBackend::StreamWaitEvent(StreamHandle stream, EventHandle event) {
  AUXSTORE_ASSIGN_OR_RETURN(auto e, GetEvent(event));
  AUXSTORE_ASSIGN_OR_RETURN(auto s, GetStream(stream));
  uint64_t gen;
  {
    std::lock_guard lock(e->mu);
    gen = e->recorded;
  }
  s->Enqueue([e, gen] {
    std::unique_lock lock(e->mu);
    e->cv.wait(lock, [&] { return e->completed >= gen; });
    return Status::Ok();
  });
  return Status::Ok();
}

Status HostBackend::SynchronizeEvent(EventHandle event) {
  AUXSTORE_ASSIGN_OR_RETURN(auto e, GetEvent(event));
  std::unique_lock lock(e->mu);
  const uint64_t gen = e->recorded;
  e->cv.wait(lock, [&] { return e->completed >= gen; });
  return Status::Ok();
}

Status HostBackend::LaunchHostFunc(StreamHandle stream, HostFunc fn) {
  if (!fn) return Status::InvalidArgument("LaunchHostFunc: empty callback");
  AUXSTORE_ASSIGN_OR_RETURN(auto s, GetStream(stream));
  s->Enqueue([fn = std::move(fn)] {
    fn();
    return Status::Ok();
  });
  return Status::Ok();
}

// ---- copies --------------------------------------------------------------------

Status HostBackend::CopyH2DAsync(std::span<const uint8_t> src, DevicePtr dst, uint64_t dst_offset,
                                 StreamHandle stream) {
  AUXSTORE_ASSIGN_OR_RETURN(auto s, GetStream(stream));
  if (src.empty()) return Status::Ok();
  AUXSTORE_RETURN_IF_ERROR(allocs_.Check(dst, dst_offset, src.size()).WithContext("CopyH2DAsync"));
  auto done = PinUse(src.data(), src.size());
  auto* to = reinterpret_cast<uint8_t*>(dst) + dst_offset;
  s->Enqueue([to, src, done = std::move(done)] {
    std::memcpy(to, src.data(), src.size());
    done();
    return Status::Ok();
  });
  return Status::Ok();
}

Status HostBackend::CopyD2HAsync(DevicePtr src, uint64_t src_offset, std::span<uint8_t> dst,
                                 StreamHandle stream) {
  AUXSTORE_ASSIGN_OR_RETURN(auto s, GetStream(stream));
  if (dst.empty()) return Status::Ok();
  AUXSTORE_RETURN_IF_ERROR(allocs_.Check(src, src_offset, dst.size()).WithContext("CopyD2H"));
  auto done = PinUse(dst.data(), dst.size());
  const auto* from = reinterpret_cast<const uint8_t*>(src) + src_offset;
  s->Enqueue([from, dst, done = std::move(done)] {
    std::memcpy(dst.data(), from, dst.size());
    done();
    return Status::Ok();
  });
  return Status::Ok();
}

Status HostBackend::CopyD2HOnStream(DevicePtr src, uint64_t src_offset, std::span<uint8_t> dst,
                                    StreamHandle stream) {
  AUXSTORE_RETURN_IF_ERROR(CopyD2HAsync(src, src_offset, dst, stream));
  return Synchronize(stream);
}

// ---- borrowed memory -------------------------------------------------------------

Status HostBackend::CheckDeviceRange(DevicePtr ptr, uint64_t bytes) const {
  Status st = allocs_.Check(ptr, 0, bytes);
  if (st.ok()) return st;
  // Out of range or unknown: either way the caller's claim is wrong.
  return Status::InvalidArgument(st.message() +
                                 " (the host backend's device memory is what "
                                 "auxstore_device_alloc / Alloc handed out)");
}

// ---- kernels -------------------------------------------------------------------

Status HostBackend::QsaBlockPool(const QsaBlockPoolArgs& args, StreamHandle stream) {
  AUXSTORE_ASSIGN_OR_RETURN(auto s, GetStream(stream));
  AUXSTORE_ASSIGN_OR_RETURN(QsaBlockPoolExtents ext, CheckQsaBlockPoolArgs(args));
  AUXSTORE_RETURN_IF_ERROR(
      allocs_.Check(args.raw_keys, 0, ext.raw_key_bytes).WithContext("raw_keys"));
  AUXSTORE_RETURN_IF_ERROR(
      allocs_.Check(args.block_keys, 0, ext.block_key_bytes).WithContext("block_keys"));
  AUXSTORE_RETURN_IF_ERROR(
      allocs_.Check(args.k_pool_k, 0, ext.vector_bytes).WithContext("k_pool_k"));
  AUXSTORE_RETURN_IF_ERROR(
      allocs_.Check(args.k_norm_w, 0, ext.vector_bytes).WithContext("k_norm_w"));
  s->Enqueue([args, ext] {
    auto span16 = [](DevicePtr p, uint64_t bytes) {
      return std::span<uint16_t>(reinterpret_cast<uint16_t*>(p), bytes / 2);
    };
    return QsaBlockPoolReference(
        args, span16(args.raw_keys, ext.raw_key_bytes), span16(args.k_pool_k, ext.vector_bytes),
        span16(args.k_norm_w, ext.vector_bytes), span16(args.block_keys, ext.block_key_bytes));
  });
  return Status::Ok();
}

}  // namespace auxstore::gpu

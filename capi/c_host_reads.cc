// Engine host memory as a read target (issue 24, docs/connectors.md): host
// buffers registered once with a store, and batched reads of many layers of
// many snapshots into them, run on the store handle's Asio pool, with
// per-target, per-snapshot and whole-batch completion.
//
// Lifetimes: a read's jobs hold a raw pointer to the read, never a
// reference, so the read (and the store it keeps) is always destroyed on a
// caller's thread: auxstore_host_read_release waits for every job before
// dropping it. A buffer counts the reads targeting it; unregistering is
// refused while the count is not 0, so no job writes into memory the engine
// took back: a read holds its buffers until it is released.
#include <algorithm>
#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "auxstore/c.h"
#include "capi/c_convert.h"
#include "capi/c_errors.h"
#include "capi/c_handles.h"
#include "capi/c_put_options.h"

using auxstore::Prefix;
using auxstore::Result;
using auxstore::Status;
using auxstore::capi::Guard;
using auxstore::capi::Live;
using auxstore::capi::NotNull;
using auxstore::capi::ToPrefix;

struct auxstore_host_buffer_t {
  std::shared_ptr<auxstore_t> db;
  uint8_t* data = nullptr;
  size_t size = 0;
  std::mutex mu;
  bool registered = true;  // under mu
  size_t reads = 0;        // under mu: reads in flight targeting it
};

struct auxstore_host_read_t {
  struct Target {
    uint64_t ns = 0;
    Prefix prefix;
    uint32_t layer = 0;
    std::shared_ptr<auxstore_host_buffer_t> buffer;
    std::span<uint8_t> dst;
    // A put (auxstore_host_put_start) instead of a read: its layers.
    bool put = false;
    uint64_t token_count = 0;
    std::vector<auxstore::LayerBlob> layers;
    auxstore::PutOptions put_options;  // block_chain set when it runs, to `chain`
    std::vector<Prefix> chain;
    size_t snapshot = 0;  // index into snapshots
    // A put's bytes, its layers' sizes together.
    size_t PutBytes() const {
      size_t n = 0;
      for (const auto& l : layers) n += l.bytes.size();
      return n;
    }
    // Under mu:
    bool done = false;
    Status status;
    size_t size = 0;
  };
  struct Snapshot {
    uint64_t ns = 0;
    Prefix prefix;
    size_t pending = 0;  // under mu
    bool reported = false;
  };

  std::shared_ptr<auxstore_t> db;
  std::vector<Target> targets;
  std::vector<Snapshot> snapshots;
  // What one pool task does: a put, or reads of some layers of one
  // snapshot (indices into targets).
  std::vector<std::vector<size_t>> jobs;
  std::vector<std::shared_ptr<auxstore_host_buffer_t>> buffers;  // distinct, each counted once
  std::atomic<bool> cancelled{false};

  // The jobs not yet claimed. Each pool task claims one, and so does a
  // caller waiting for the whole read (auxstore_host_read_wait), which runs
  // what is left on its own thread instead of sleeping while a pool thread
  // wakes up: on a VM a sleeping vCPU woke late, and one pool thread ran a
  // small batch's two jobs one after the other (bench/RESULTS.md, issue 24).
  // Shared with the pool tasks: one that finds every job claimed touches
  // only this, never the read, which may be gone by then.
  struct JobClaims {
    std::atomic<size_t> next{0};
    size_t count = 0;
    // The next unclaimed job, or count when none is left.
    size_t Claim() { return std::min(next.fetch_add(1), count); }
  };
  std::shared_ptr<JobClaims> claims = std::make_shared<JobClaims>();

  mutable std::mutex mu;
  std::condition_variable cv;
  size_t pending = 0;
  // Under mu: callers waiting for one target or one snapshot. Without them
  // only the last target wakes the waiters: a wake per layer cost a futex
  // call and a context switch each, more than a small page's read.
  size_t partial_waiters = 0;

  void Run(size_t job);
  // Claims and runs the next job: false when none was left.
  bool RunNext() {
    const size_t job = claims->Claim();
    if (job == claims->count) return false;
    Run(job);
    return true;
  }
  // Posts a pool task per job; each runs the next unclaimed one, if any.
  // (`r` is used only for a claimed job, whose targets the read's release
  // waits for.)
  void Post(boost::asio::thread_pool& pool) {
    claims->count = jobs.size();
    for (size_t j = 0; j < jobs.size(); ++j) {
      boost::asio::post(pool, [r = this, c = claims] {
        const size_t job = c->Claim();
        if (job < c->count) r->Run(job);
      });
    }
  }
  // Marks targets done (a job's all under one lock), then wakes the waiters
  // whose wait may be over.
  struct Done {
    size_t i;
    Status status;
    size_t size;
  };
  void FinishAll(std::vector<Done> done);
  void Finish(size_t i, Status status, size_t size) { FinishAll({{i, std::move(status), size}}); }
  // Waits under `lock` until `ready()`, counted as a partial waiter.
  template <typename Ready>
  void WaitFor(std::unique_lock<std::mutex>& lock, Ready ready) {
    ++partial_waiters;
    cv.wait(lock, ready);
    --partial_waiters;
  }
  void WaitAll() {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return pending == 0; });
  }
};

namespace {

auxstore::Result<std::shared_ptr<auxstore_host_read_t>> LiveRead(const auxstore_host_read_t* r) {
  return Live(r, "read");
}

boost::asio::thread_pool& HostPool(auxstore_t& db) {
  std::call_once(db.host_pool_once, [&] {
    const uint32_t threads = std::max<uint32_t>(2, db.options.work_threads);
    db.host_pool = std::make_unique<boost::asio::thread_pool>(threads);
  });
  return *db.host_pool;
}

std::string TargetName(size_t i) { return "targets[" + std::to_string(i) + "]"; }

Status Group(auxstore_host_read_t& read);

// Checks every target against its registered buffer; the read's targets,
// snapshots and buffers (not yet counted as busy).
Status Plan(const std::shared_ptr<auxstore_t>& db, const auxstore_host_read_target_t* targets,
            size_t n, auxstore_host_read_t& read) {
  struct Span {
    const auxstore_host_buffer_t* buffer;
    size_t begin, end, index;
  };
  std::vector<Span> spans;
  for (size_t i = 0; i < n; ++i) {
    const auxstore_host_read_target_t& t = targets[i];
    const std::string name = TargetName(i);
    auto buffer = Live(t.buffer, (name + ".buffer").c_str());
    if (!buffer.ok()) return buffer.status();
    if ((*buffer)->db != db) {
      return Status::InvalidArgument(name + ".buffer is registered with another store");
    }
    const size_t size = (*buffer)->size;
    if (t.offset > size || t.capacity > size - t.offset) {
      return Status::InvalidArgument(
          name + ": [" + std::to_string(t.offset) + ", offset + " + std::to_string(t.capacity) +
          ") is outside its registered buffer of " + std::to_string(size) + " bytes");
    }
    spans.push_back({buffer->get(), t.offset, t.offset + t.capacity, i});
    auxstore_host_read_t::Target target;
    target.ns = t.ns;
    target.prefix = ToPrefix(t.prefix);
    target.layer = t.layer;
    target.buffer = *buffer;
    target.dst = {(*buffer)->data + t.offset, t.capacity};
    read.targets.push_back(std::move(target));
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return std::tie(a.buffer, a.begin) < std::tie(b.buffer, b.begin);
  });
  for (size_t k = 1; k < spans.size(); ++k) {
    const Span &a = spans[k - 1], &b = spans[k];
    if (a.buffer == b.buffer && b.begin < a.end && a.begin < a.end && b.begin < b.end) {
      return Status::InvalidArgument(TargetName(std::max(a.index, b.index)) + " overlaps " +
                                     TargetName(std::min(a.index, b.index)) +
                                     " in the same buffer");
    }
  }
  return Group(read);
}

// A task reads layers until they hold this many bytes: small layers of one
// snapshot share its manifest read and record iterator
// (Store::ReadLayersInto), small snapshots share a task (a task posted and
// a waiter woken per connector page cost more than the page's read), and
// large layers still read in parallel.
constexpr size_t kJobBytes = size_t{1} << 20;

// Groups the read's targets into jobs and collects its distinct buffers.
Status Group(auxstore_host_read_t& read) {
  size_t open_job = SIZE_MAX;  // the job still taking layers
  const bool batch_puts = !read.db->options.shared.empty() &&
                          read.db->options.shared_write == auxstore::SharedWrite::kThrough;
  std::vector<size_t> job_bytes;
  for (size_t i = 0; i < read.targets.size(); ++i) {
    auxstore_host_read_t::Target& t = read.targets[i];
    const auto same = [&](const auto& s) { return s.ns == t.ns && s.prefix == t.prefix; };
    // Targets mostly come snapshot by snapshot: the last one first.
    size_t k = read.snapshots.size();
    if (k > 0 && same(read.snapshots.back())) {
      k -= 1;
    } else {
      k = static_cast<size_t>(std::find_if(read.snapshots.begin(), read.snapshots.end(), same) -
                              read.snapshots.begin());
    }
    if (k == read.snapshots.size()) read.snapshots.push_back({t.ns, t.prefix});
    t.snapshot = k;
    ++read.snapshots[k].pending;
    // A job holds at most kJobBytes (a larger layer fills one). A put fills
    // one too, except on a shared pool (kThrough): there small puts share
    // one Store::PutSnapshots, whose pages go to the pool in one window
    // (locally, puts on two threads let their WAL syncs share a commit).
    size_t bytes = std::min(t.dst.size(), kJobBytes);
    if (t.put) bytes = batch_puts ? std::clamp<size_t>(t.PutBytes(), 1, kJobBytes) : kJobBytes;
    size_t& job = open_job;
    if (job == SIZE_MAX || bytes > kJobBytes - job_bytes[job]) {
      job = read.jobs.size();
      read.jobs.emplace_back();
      job_bytes.push_back(0);
    }
    read.jobs[job].push_back(i);
    job_bytes[job] += bytes;
    if (std::find(read.buffers.begin(), read.buffers.end(), t.buffer) == read.buffers.end()) {
      read.buffers.push_back(t.buffer);
    }
  }
  read.pending = read.targets.size();
  return Status::Ok();
}

// Checks every snapshot's layers against their registered buffers; one
// target per snapshot.
Status PlanPuts(const std::shared_ptr<auxstore_t>& db, const auxstore_host_put_t* snapshots,
                size_t n, const auxstore_put_options_t* const* options,
                auxstore_host_read_t& read) {
  for (size_t i = 0; i < n; ++i) {
    const auxstore_host_put_t& p = snapshots[i];
    const std::string name = "snapshots[" + std::to_string(i) + "]";
    if (p.n_layers > 0 && p.layers == nullptr) {
      return Status::InvalidArgument(name + ".layers is NULL");
    }
    auxstore_host_read_t::Target target;
    if (options != nullptr) {
      AUXSTORE_RETURN_IF_ERROR(auxstore::capi::ToPutOptions(
          options[i], "options[" + std::to_string(i) + "]", &target.chain, &target.put_options));
    }
    target.put = true;
    target.ns = p.ns;
    target.prefix = ToPrefix(p.prefix);
    target.token_count = p.token_count;
    for (size_t k = 0; k < p.n_layers; ++k) {
      const auxstore_host_layer_t& l = p.layers[k];
      const std::string at = name + ".layers[" + std::to_string(k) + "]";
      if (l.kind < AUXSTORE_KIND_QSA || l.kind > AUXSTORE_KIND_OPAQUE) {
        return Status::InvalidArgument(at + ".kind is " + std::to_string(l.kind) +
                                       ", not a known kind (1 QSA, 2 DSA, 3 opaque)");
      }
      auto buffer = Live(l.buffer, (at + ".buffer").c_str());
      if (!buffer.ok()) return buffer.status();
      if ((*buffer)->db != db) {
        return Status::InvalidArgument(at + ".buffer is registered with another store");
      }
      const size_t size = (*buffer)->size;
      if (l.offset > size || l.size > size - l.offset) {
        return Status::InvalidArgument(
            at + ": [" + std::to_string(l.offset) + ", offset + " + std::to_string(l.size) +
            ") is outside its registered buffer of " + std::to_string(size) + " bytes");
      }
      target.layers.push_back(
          {l.layer, static_cast<auxstore::Kind>(l.kind), {(*buffer)->data + l.offset, l.size}});
      if (target.buffer == nullptr) target.buffer = *buffer;
      if (std::find(read.buffers.begin(), read.buffers.end(), *buffer) == read.buffers.end()) {
        read.buffers.push_back(*buffer);
      }
    }
    read.targets.push_back(std::move(target));
  }
  return Group(read);
}

// Marks every buffer busy, unless one was unregistered meanwhile.
Status MarkBusy(const auxstore_host_read_t& read) {
  for (size_t k = 0; k < read.buffers.size(); ++k) {
    auxstore_host_buffer_t& b = *read.buffers[k];
    std::lock_guard lock(b.mu);
    if (!b.registered) {
      for (size_t j = 0; j < k; ++j) {
        std::lock_guard undo(read.buffers[j]->mu);
        --read.buffers[j]->reads;
      }
      return Status::InvalidArgument("a target's buffer was unregistered");
    }
    ++b.reads;
  }
  return Status::Ok();
}

}  // namespace

void auxstore_host_read_t::Run(size_t job) {
  // A copy: once the last target is finished the caller may free the read
  // (release waits for exactly that), so nothing of it is touched after.
  const std::vector<size_t> mine = jobs[job];
  if (cancelled.load()) {
    for (size_t i : mine) Finish(i, Status::Unavailable("cancelled"), 0);
    return;
  }
  const Target& first = targets[mine.front()];
  if (first.put) {  // the job's snapshots in one batch, each with its own outcome
    std::vector<auxstore::Store::SnapshotPut> puts(mine.size());
    for (size_t k = 0; k < mine.size(); ++k) {
      const Target& t = targets[mine[k]];
      puts[k].ns = t.ns;
      puts[k].prefix = t.prefix;
      puts[k].token_count = t.token_count;
      puts[k].layers = t.layers;
      puts[k].options = t.put_options;
      puts[k].options.block_chain = t.chain;
    }
    (void)db->store->PutSnapshots(puts);
    std::vector<Done> done;
    done.reserve(mine.size());
    for (size_t k = 0; k < mine.size(); ++k) {
      done.push_back({mine[k], std::move(puts[k].status), targets[mine[k]].PutBytes()});
    }
    return FinishAll(std::move(done));
  }
  // One verified copy, from the store's block into the engine's buffer:
  // every layer of a snapshot in the job under one manifest read, the
  // job's manifests in one lookup (ReadSnapshotsInto), the snapshots in the
  // order the caller named them.
  std::vector<size_t> order = mine;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return targets[a].snapshot < targets[b].snapshot; });
  std::vector<auxstore::Store::LayerInto> layers;
  layers.reserve(order.size());
  std::vector<auxstore::Store::SnapshotInto> snaps;
  for (size_t from = 0; from < order.size();) {
    const Target& t = targets[order[from]];
    size_t to = from;
    for (; to < order.size() && targets[order[to]].snapshot == t.snapshot; ++to) {
      layers.push_back({targets[order[to]].layer, targets[order[to]].dst});
    }
    snaps.push_back({t.ns, t.prefix, std::span(layers).subspan(from, to - from)});
    from = to;
  }
  db->store->ReadSnapshotsInto(snaps);
  std::vector<Done> done;
  done.reserve(order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    done.push_back({order[k], std::move(layers[k].status), static_cast<size_t>(layers[k].bytes)});
  }
  FinishAll(std::move(done));
}

void auxstore_host_read_t::FinishAll(std::vector<Done> done) {
  std::lock_guard lock(mu);
  for (Done& d : done) {
    Target& t = targets[d.i];
    if (!d.status.ok()) {
      d.status = d.status.WithContext(t.put ? "snapshots[" + std::to_string(d.i) + "]"
                                            : TargetName(d.i) + " (layer " +
                                                  std::to_string(t.layer) + ")");
    }
    t.status = std::move(d.status);
    t.size = d.size;
    t.done = true;
    --snapshots[t.snapshot].pending;
    --pending;
  }
  // Under the lock: the waiter may free the read once it wakes.
  if (pending == 0 || partial_waiters > 0) cv.notify_all();
}

extern "C" {

int auxstore_register_host_buffer(auxstore_t* db, void* data, size_t size,
                                  auxstore_host_buffer_t** out, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(auto d, Live(db, "db"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(data, "data"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(out, "out"));
    if (size == 0) return Status::InvalidArgument("size is 0");
    auto buffer = std::make_shared<auxstore_host_buffer_t>();
    buffer->db = std::move(d);
    buffer->data = static_cast<uint8_t*>(data);
    buffer->size = size;
    *out = auxstore::capi::NewHandle(std::move(buffer));
    return Status::Ok();
  });
}

int auxstore_unregister_host_buffer(auxstore_host_buffer_t* buffer, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(auto b, Live(buffer, "buffer"));
    {
      std::lock_guard lock(b->mu);
      if (b->reads > 0) {
        return Status::Busy("buffer is the target of " + std::to_string(b->reads) +
                            " read(s) in flight: wait for or release them first");
      }
      b->registered = false;
    }
    auxstore::capi::Take(buffer);
    return Status::Ok();
  });
}

int auxstore_host_read_start(auxstore_t* db, const auxstore_host_read_target_t* targets, size_t n,
                             auxstore_host_read_t** out, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(auto d, Live(db, "db"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(out, "out"));
    if (n > 0) AUXSTORE_RETURN_IF_ERROR(NotNull(targets, "targets"));
    auto read = std::make_shared<auxstore_host_read_t>();
    read->db = d;
    AUXSTORE_RETURN_IF_ERROR(Plan(d, targets, n, *read));
    AUXSTORE_RETURN_IF_ERROR(MarkBusy(*read));
    boost::asio::thread_pool& pool = HostPool(*d);
    auxstore_host_read_t* r = read.get();
    *out = auxstore::capi::NewHandle(std::move(read));
    r->Post(pool);
    return Status::Ok();
  });
}

int auxstore_host_put_start(auxstore_t* db, const auxstore_host_put_t* snapshots, size_t n,
                            auxstore_host_read_t** out, char** errmsg) {
  return auxstore_host_put_start_ex(db, snapshots, n, nullptr, out, errmsg);
}

int auxstore_host_put_start_ex(auxstore_t* db, const auxstore_host_put_t* snapshots, size_t n,
                               const auxstore_put_options_t* const* options,
                               auxstore_host_read_t** out, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(auto d, Live(db, "db"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(out, "out"));
    if (n > 0) AUXSTORE_RETURN_IF_ERROR(NotNull(snapshots, "snapshots"));
    auto read = std::make_shared<auxstore_host_read_t>();
    read->db = d;
    AUXSTORE_RETURN_IF_ERROR(PlanPuts(d, snapshots, n, options, *read));
    AUXSTORE_RETURN_IF_ERROR(MarkBusy(*read));
    boost::asio::thread_pool& pool = HostPool(*d);
    auxstore_host_read_t* r = read.get();
    *out = auxstore::capi::NewHandle(std::move(read));
    r->Post(pool);
    return Status::Ok();
  });
}

int auxstore_host_read_poll(const auxstore_host_read_t* read) {
  const auto r = auxstore::capi::FindLive(read);
  if (r == nullptr) return -1;
  std::lock_guard lock(r->mu);
  return r->pending == 0 ? 1 : 0;
}

int auxstore_host_read_target_done(const auxstore_host_read_t* read, size_t i) {
  const auto r = auxstore::capi::FindLive(read);
  if (r == nullptr || i >= r->targets.size()) return -1;
  std::lock_guard lock(r->mu);
  return r->targets[i].done ? 1 : 0;
}

int auxstore_host_read_wait_target(auxstore_host_read_t* read, size_t i, size_t* size,
                                   char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto r, LiveRead(read));
    if (i >= r->targets.size()) {
      return Status::InvalidArgument("i = " + std::to_string(i) + ": the read has " +
                                     std::to_string(r->targets.size()) + " targets");
    }
    std::unique_lock lock(r->mu);
    r->WaitFor(lock, [&] { return r->targets[i].done; });
    if (size != nullptr && r->targets[i].status.ok()) *size = r->targets[i].size;
    return r->targets[i].status;
  });
}

int auxstore_host_read_wait_snapshot(auxstore_host_read_t* read, uint64_t ns,
                                     const uint8_t prefix[16], char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto r, LiveRead(read));
    AUXSTORE_RETURN_IF_ERROR(NotNull(prefix, "prefix"));
    const Prefix p = ToPrefix(prefix);
    // Group() made one Snapshot per (ns, prefix): find it, wait for it.
    const auto it = std::find_if(r->snapshots.begin(), r->snapshots.end(),
                                 [&](const auto& s) { return s.ns == ns && s.prefix == p; });
    if (it == r->snapshots.end()) {
      return Status::InvalidArgument("no target of the read is of that (namespace, prefix)");
    }
    const size_t index = static_cast<size_t>(it - r->snapshots.begin());
    std::unique_lock lock(r->mu);
    r->WaitFor(lock, [&] { return r->snapshots[index].pending == 0; });
    for (const auto& t : r->targets) {
      if (t.snapshot == index && !t.status.ok()) return t.status;
    }
    return Status::Ok();
  });
}

int auxstore_host_read_wait(auxstore_host_read_t* read, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto r, LiveRead(read));
    while (r->RunNext()) {
    }
    r->WaitAll();
    std::lock_guard lock(r->mu);
    for (const auto& t : r->targets) {
      if (!t.status.ok()) return t.status;
    }
    return Status::Ok();
  });
}

int auxstore_host_read_finished(auxstore_host_read_t* read, auxstore_snapshot_ref_t* snapshots,
                                size_t capacity, size_t* n, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto r, LiveRead(read));
    AUXSTORE_RETURN_IF_ERROR(NotNull(n, "n"));
    if (capacity > 0) AUXSTORE_RETURN_IF_ERROR(NotNull(snapshots, "snapshots"));
    std::lock_guard lock(r->mu);
    size_t count = 0;
    for (auto& s : r->snapshots) {
      if (count == capacity) break;
      if (s.reported || s.pending > 0) continue;
      snapshots[count].ns = s.ns;
      std::memcpy(snapshots[count++].prefix, s.prefix.bytes.data(), 16);
      s.reported = true;
    }
    *n = count;
    return Status::Ok();
  });
}

void auxstore_host_read_cancel(auxstore_host_read_t* read) {
  const auto r = auxstore::capi::FindLive(read);
  if (r == nullptr) {
    if (read != nullptr) {
      auxstore::capi::ReportMisuse(__func__, read, auxstore::capi::HandleKind::kHostRead);
    }
    return;
  }
  r->cancelled = true;
}

void auxstore_host_read_release(auxstore_host_read_t* read) {
  if (read == nullptr) return;
  try {
    const auto r = auxstore::capi::Take(read);
    if (r == nullptr) {
      auxstore::capi::ReportMisuse(__func__, read, auxstore::capi::HandleKind::kHostRead);
      return;
    }
    r->cancelled = true;
    r->WaitAll();
    // The buffers are the engine's again: they may be unregistered now.
    for (const auto& b : r->buffers) {
      std::lock_guard busy(b->mu);
      --b->reads;
    }
  } catch (...) {  // out of memory for the warning: nothing to do
  }
}

}  // extern "C"

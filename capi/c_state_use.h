// How C calls use an auxstore_state_t: the handle must be live and not the
// target of a restore still running, and while a call uses it (StateUse)
// or a restore targets it (RestoreClaims) it cannot be released
// (auxstore_state_release answers AUXSTORE_BUSY). Internal to capi/.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "capi/c_handles.h"

namespace auxstore::capi {

// Under s.use_mu: whether a restore still targets `s` (a restore is done
// once its handle is, or its completion ran).
inline bool RestoreRunning(auxstore_state_t& s) {
  if (!s.restore_marked) return false;
  if (s.restoring != nullptr && s.restoring->done()) {
    s.restore_marked = false;
    s.restoring.reset();
    return false;
  }
  return true;
}

inline Status RestoreRunningError(const std::string& name) {
  return Status::Busy(name +
                      " is the target of a restore still running: use or release it once that "
                      "restore is done");
}

// One call's use of a state.
class StateUse {
 public:
  static Result<StateUse> Begin(const auxstore_state_t* handle, const std::string& name) {
    AUXSTORE_ASSIGN_OR_RETURN(std::shared_ptr<auxstore_state_t> s, Live(handle, name.c_str()));
    std::lock_guard lock(s->use_mu);
    // Released while this call looked it up: as good as not live.
    if (s->state == nullptr) {
      return Status::InvalidArgument(NotLiveMessage(name.c_str(), HandleKind::kState));
    }
    if (RestoreRunning(*s)) return RestoreRunningError(name);
    ++s->calls;
    return StateUse(std::move(s));
  }

  StateUse(StateUse&& o) noexcept : s_(std::move(o.s_)) {}
  StateUse& operator=(StateUse&&) = delete;
  ~StateUse() {
    if (s_ == nullptr) return;
    std::lock_guard lock(s_->use_mu);
    --s_->calls;
  }

  auxstore_state_t* operator->() const { return s_.get(); }
  auxstore_state_t& operator*() const { return *s_; }

 private:
  explicit StateUse(std::shared_ptr<auxstore_state_t> s) : s_(std::move(s)) {}
  std::shared_ptr<auxstore_state_t> s_;
};

// A restore's targets, marked before it starts and until it is done. The
// marks go with the restore's completion (Wrap), or with this object when
// the restore never started.
class RestoreClaims {
 public:
  RestoreClaims() = default;
  RestoreClaims(const RestoreClaims&) = delete;
  RestoreClaims& operator=(const RestoreClaims&) = delete;
  ~RestoreClaims() {
    if (started_) return;
    for (const Claim& c : claims_) Unmark(*c.state, c.gen);
  }

  // Marks the state behind `handle`; the state object in *out.
  Status Add(const auxstore_state_t* handle, const std::string& name,
             std::shared_ptr<auxstore_state_t>* out) {
    AUXSTORE_ASSIGN_OR_RETURN(std::shared_ptr<auxstore_state_t> s, Live(handle, name.c_str()));
    std::lock_guard lock(s->use_mu);
    if (s->state == nullptr) {
      return Status::InvalidArgument(NotLiveMessage(name.c_str(), HandleKind::kState));
    }
    if (RestoreRunning(*s)) return RestoreRunningError(name);
    if (s->calls > 0) return Status::Busy(name + " is in use by another call");
    s->restore_marked = true;
    s->restoring.reset();
    claims_.push_back({s, ++s->restore_gen});
    *out = std::move(s);
    return Status::Ok();
  }

  // The restore's completion: unmarks the targets, then runs `done` (may be
  // empty). From here the marks belong to the restore.
  RestoreCallback Wrap(RestoreCallback done) {
    std::vector<std::pair<std::weak_ptr<auxstore_state_t>, uint64_t>> marks;
    for (const Claim& c : claims_) marks.emplace_back(c.state, c.gen);
    started_ = true;
    return [marks = std::move(marks), done = std::move(done)](Status st) {
      for (const auto& [weak, gen] : marks) {
        if (auto s = weak.lock()) Unmark(*s, gen);
      }
      if (done) done(std::move(st));
    };
  }

  // Records the started restore's handle on every target still marked by it.
  void Started(const std::shared_ptr<RestoreHandle>& h) const {
    for (const Claim& c : claims_) {
      std::lock_guard lock(c.state->use_mu);
      if (c.state->restore_marked && c.state->restore_gen == c.gen) c.state->restoring = h;
    }
  }

 private:
  struct Claim {
    std::shared_ptr<auxstore_state_t> state;
    uint64_t gen = 0;
  };
  static void Unmark(auxstore_state_t& s, uint64_t gen) {
    std::lock_guard lock(s.use_mu);
    if (s.restore_gen != gen) return;
    s.restore_marked = false;
    s.restoring.reset();
  }

  std::vector<Claim> claims_;
  bool started_ = false;
};

}  // namespace auxstore::capi

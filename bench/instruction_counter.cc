#include "bench/instruction_counter.h"

#include <dirent.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define AUXSTORE_HAVE_CALLGRIND 1
#else
#define AUXSTORE_HAVE_CALLGRIND 0
#endif

namespace auxstore::bench {
namespace {

int OpenInstructions(pid_t tid) {
  perf_event_attr a;
  std::memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_HARDWARE;
  a.config = PERF_COUNT_HW_INSTRUCTIONS;
  a.exclude_kernel = 1;  // the kernel's page-cache copy is not counted
  a.exclude_hv = 1;
  a.inherit = 1;  // and threads this one starts meanwhile
  a.disabled = 0;
  return static_cast<int>(::syscall(SYS_perf_event_open, &a, tid, -1, -1, 0));
}

}  // namespace

InstructionCounter::~InstructionCounter() { CloseAll(); }

void InstructionCounter::CloseAll() {
  for (int fd : fds_) ::close(fd);
  fds_.clear();
}

bool InstructionCounter::UnderValgrind() {
#if AUXSTORE_HAVE_CALLGRIND
  return RUNNING_ON_VALGRIND != 0;
#else
  return false;
#endif
}

std::string InstructionCounter::Start(const std::string& region) {
  CloseAll();
  region_ = region;
  if (UnderValgrind()) {
#if AUXSTORE_HAVE_CALLGRIND
    CALLGRIND_ZERO_STATS;
#endif
    return {};
  }
  // One counter per thread that exists now: perf_event_open counts one task
  // (and, with inherit, the tasks it starts), not a whole process.
  DIR* d = ::opendir("/proc/self/task");
  if (d == nullptr) return std::string("/proc/self/task: ") + std::strerror(errno);
  std::string why;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const int fd = OpenInstructions(static_cast<pid_t>(std::atoi(e->d_name)));
    if (fd < 0) {
      why = std::string("perf_event_open(instructions): ") + std::strerror(errno) +
            (errno == ENOENT || errno == EOPNOTSUPP ? " (no hardware counters here, e.g. a VM "
                                                      "without a PMU; run under callgrind)"
                                                    : "");
      break;
    }
    fds_.push_back(fd);
  }
  ::closedir(d);
  if (!why.empty()) CloseAll();
  return why;
}

std::optional<uint64_t> InstructionCounter::Stop() {
  if (UnderValgrind()) {
#if AUXSTORE_HAVE_CALLGRIND
    CALLGRIND_DUMP_STATS_AT(region_.c_str());
#endif
    return std::nullopt;
  }
  if (fds_.empty()) return std::nullopt;
  uint64_t total = 0;
  for (int fd : fds_) {
    uint64_t n = 0;
    if (::read(fd, &n, sizeof n) != static_cast<ssize_t>(sizeof n)) {
      CloseAll();
      return std::nullopt;
    }
    total += n;
  }
  CloseAll();
  return total;
}

}  // namespace auxstore::bench

// Plain-POSIX machinery for the trust tests (tests/trust/): child processes
// with their output collected line by line, directory listings that can be
// compared, copies, a tmpfs mount that is always unmounted, and --cycles.
// Nothing here links the store: the tests attack it from outside.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/tmpfs.h"

namespace auxstore::trust {

// ---- paths of the binaries under test (set at build time) ----------------
std::string CliPath();        // the `auxstore` CLI
std::string ChildPath();      // auxstore_trust_child (C ABI)
std::string KillChildPath();  // auxstore_trust_kill_child (C++, failpoint FS)

// ---- cycles ----------------------------------------------------------------
// --cycles N (trust_main.cc), else AUXSTORE_RELIABILITY_CYCLES, else fallback;
// at most AUXSTORE_MAX_CYCLES (tests/support/cycles.h).
int Cycles(int fallback);
void SetCycles(int n);

// ---- child processes -------------------------------------------------------
// "exit 0", "exit 2", "killed by signal 6 (SIGABRT)", "hung (killed after
// the guard timeout)".
std::string DescribeWait(int wait_status);
std::string SignalName(int sig);

struct ProcResult {
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  bool hung = false;   // killed by the guard timeout (not a timing assertion: a hang)
  bool killed_by_us = false;
  std::vector<std::string> lines;  // stdout, one entry per line
  std::string out, err;            // stdout and stderr, whole
  std::string Describe() const;    // "exit 0" / "killed by signal 6 (SIGABRT)" ...
  bool Exited(int code) const { return signal == 0 && !hung && exit_code == code; }
  // Lines of stdout starting with `prefix` (whole lines).
  std::vector<std::string> LinesWith(const std::string& prefix) const;
  std::optional<std::string> FirstLineWith(const std::string& prefix) const;
  std::string ErrTail(size_t max_chars = 1500) const;
};

// A running child: fork + execv, stdout and stderr read by a thread.
class Child {
 public:
  Child() = default;
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // `inherit` fds stay open across exec (everything else is O_CLOEXEC).
  bool Start(const std::vector<std::string>& argv, const std::vector<int>& inherit = {});
  // Blocks until a stdout line starting with `prefix` has arrived (true; the
  // line in *line), or the child closed stdout (false). Lines already seen
  // count. `guard_s`: give up after this long (a hang guard).
  bool WaitForLine(const std::string& prefix, std::string* line = nullptr, int guard_s = 300);
  std::vector<std::string> Lines();
  void Kill(int sig);
  // Waits for the child to end (SIGKILLs it after guard_s) and returns everything.
  ProcResult Wait(int guard_s = 300);
  pid_t pid() const { return pid_; }

 private:
  void Reader(int out_fd, int err_fd);

  pid_t pid_ = -1;
  std::thread reader_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> lines_;
  std::string out_, err_, partial_;
  bool eof_ = false;
  bool killed_ = false;
  bool waited_ = false;
  ProcResult result_;
};

// Runs argv to completion. `kill_on_line`: SIGKILL the child as soon as a
// stdout line starting with it arrives.
ProcResult RunProcess(const std::vector<std::string>& argv, const std::string& kill_on_line = "",
                      int guard_s = 300);

// Convenience: the CLI with these arguments.
ProcResult RunCli(const std::vector<std::string>& args);

// ---- files and directories -------------------------------------------------
struct Entry {
  char type = '?';  // 'f' file, 'd' directory, 'l' symlink, '?' other
  unsigned mode = 0;
  uint64_t size = 0;
  bool operator==(const Entry& o) const {
    return type == o.type && mode == o.mode && size == o.size;
  }
};
using Listing = std::map<std::string, Entry>;  // path relative to the root

// Recursive lstat listing of `root` (the root itself is "."). Symlinks are
// listed, not followed.
Listing List(const std::string& root);
// Human-readable differences; empty when equal. `compare_modes`: also modes.
std::string DiffListings(const Listing& before, const Listing& after, bool compare_modes);
std::string ListingToString(const Listing& l);
std::string ModeString(unsigned mode);

// Recursive copy (symlinks copied as symlinks); false with *why on failure.
bool CopyTree(const std::string& from, const std::string& to, std::string* why);
void RemoveTree(const std::string& path);
bool ReadFile(const std::string& path, std::string* out);
bool WriteFile(const std::string& path, const std::string& data, unsigned mode = 0644);
uint64_t FileSize(const std::string& path);  // 0 when missing

// Files directly in `dir` whose name matches a type used by the trust tests:
// "SST" (*.sst), "WAL" (*.log), "MANIFEST" (MANIFEST-*), "OPTIONS"
// (OPTIONS-*), "CURRENT", "WATERMARK" (AUXSTORE-WATERMARK); "" otherwise.
std::string FileType(const std::string& name);
std::vector<std::string> FilesOfType(const std::string& dir, const std::string& type);

// A fresh directory under $TMPDIR, removed (recursively) on destruction.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag = "trust");
  ~ScratchDir();
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A tmpfs mounted for one test, and a file filling it (tests/support/tmpfs.h).
using testing::FillUp;
using testing::TmpfsMount;

// ---- seeds on command lines ----------------------------------------------------
std::string SeedList(const std::vector<uint64_t>& seeds);  // "1,2,5"
std::string SeedList(const std::set<uint64_t>& seeds);

// "A 17" -> 17 for each line starting with `tag` + ' '.
std::set<uint64_t> SeedsOnLines(const std::vector<std::string>& lines, const std::string& tag);

// The child's verdict for each seed ("R <seed> <verdict> ...").
struct ReadVerdict {
  std::string verdict;  // exact | absent | error | WRONG
  int code = 0;         // for error
  std::string detail;   // rest of the line
};
struct ReadReport {
  bool opened = false;
  int open_code = -1;  // AUXSTORE_* when !opened
  std::string open_message;
  std::map<uint64_t, ReadVerdict> seeds;
  std::optional<ReadVerdict> restore;  // "RESTORE <seed> ..." line
  bool closed = false;                 // the child reached "CLOSED"
  // Stats::quarantines on the first and the last STATS line ("read" prints
  // one before and one after its reads).
  std::optional<uint64_t> quarantines_first, quarantines_last;
};
ReadReport ParseRead(const ProcResult& r);

}  // namespace auxstore::trust

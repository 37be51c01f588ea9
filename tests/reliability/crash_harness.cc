#include "tests/reliability/crash_harness.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <thread>

#include "tests/support/cycles.h"

extern char** environ;

namespace auxstore::reliability {
namespace {

int g_cycles = 0;

void ParseLine(const std::string& line, WriterRun* run) {
  std::istringstream in(line);
  std::string tag;
  in >> tag;
  uint64_t seed = 0;
  if (tag == "READY") {
    run->ready = true;
  } else if (tag == "B" && (in >> seed)) {
    run->attempted.insert(seed);
  } else if (tag == "A" && (in >> seed)) {
    run->acked.insert(seed);
  } else if (tag == "E") {
    run->errors.push_back(line);
  } else if (tag == "OPENFAIL") {
    run->open_error = line.substr(9);
  }
}

}  // namespace

std::string CrashWriterPath() { return AUXSTORE_CRASH_WRITER; }

void SetBatteryCycles(int cycles) { g_cycles = cycles; }

int BatteryCycles(int fallback) { return testing::CyclesFor(g_cycles, fallback); }

WriterRun RunWriter(const std::vector<std::string>& args, std::chrono::milliseconds kill_after,
                    bool kill_before_ready) {
  WriterRun run;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return run;
  const std::string bin = CrashWriterPath();
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(bin.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  using Clock = std::chrono::steady_clock;
  Clock::time_point deadline = Clock::now() + kill_after;
  bool deadline_set = kill_before_ready;
  std::string buf;
  char chunk[4096];
  for (;;) {
    int wait_ms = 1000;
    if (deadline_set && !run.killed) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        ::kill(pid, SIGKILL);
        run.killed = true;
      } else {
        wait_ms = static_cast<int>(left);
      }
    }
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, wait_ms) <= 0) continue;
    const ssize_t n = ::read(fds[0], chunk, sizeof chunk);
    if (n <= 0) break;  // EOF: the child is gone
    buf.append(chunk, static_cast<size_t>(n));
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      ParseLine(buf.substr(0, nl), &run);
      buf.erase(0, nl + 1);
      if (run.ready && !deadline_set) {
        deadline = Clock::now() + kill_after;
        deadline_set = true;
      }
    }
  }
  // A partial last line was cut by the kill: it acknowledges nothing.
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL) {
    run.errors.push_back("writer died of signal " + std::to_string(WTERMSIG(status)));
  }
  return run;
}

int RunKilledAfter(const std::vector<std::string>& args, std::chrono::milliseconds kill_after) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (spawned != 0) return -1000;
  const auto deadline = std::chrono::steady_clock::now() + kill_after;
  int status = 0;
  bool exited = false;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!exited) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? -WTERMSIG(status) : -1;
}

}  // namespace auxstore::reliability

// The writer child of the kill -9 tests (rados_test_child), spawned with its
// stdout on a pipe the test reads line by line.
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

extern char** environ;

namespace auxstore::rados::testenv {

struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;  // its stdout

  // SIGKILL, reaped; true when it died of the signal (not on its own).
  bool Kill() {
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    if (out) std::fclose(out);
    out = nullptr;
    return WIFSIGNALED(status);
  }
};

// Spawns rados_test_child with `args` (after argv[0]).
inline Child SpawnChild(std::vector<std::string> args) {
  Child child;
  int fds[2];
  if (pipe(fds) != 0) return child;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::vector<char*> argv = {const_cast<char*>(AUXSTORE_RADOS_CHILD)};
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (posix_spawn(&child.pid, AUXSTORE_RADOS_CHILD, &actions, nullptr, argv.data(), environ) != 0) {
    child.pid = -1;
  }
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  child.out = fdopen(fds[0], "r");
  return child;
}

}  // namespace auxstore::rados::testenv

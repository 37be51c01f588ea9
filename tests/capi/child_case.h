/* Running C ABI misuse in child processes: each case forks, runs, and must
 * exit 0 (every expected code seen); a signal or another exit code is a
 * failure. Shared by misuse_test.c and misuse_fuzz_test.c. */
#ifndef AUXSTORE_TESTS_CAPI_CHILD_CASE_H_
#define AUXSTORE_TESTS_CAPI_CHILD_CASE_H_

#define _POSIX_C_SOURCE 200809L

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "auxstore/c.h"

/* In a child: the call returned `want` with a message containing `needle`;
 * otherwise print why and exit 1. Frees the message. */
#define EXPECT(call, want, needle) expect_code((call), (want), (needle), #call, __LINE__)

static char* g_err = NULL;

static inline void expect_code(int got, int want, const char* needle, const char* what, int line) {
  const char* msg = g_err != NULL ? g_err : "(none)";
  if (got != want) {
    fprintf(stderr, "line %d: %s: code %d (%s), want %d (%s); message: %s\n", line, what, got,
            auxstore_code_name(got), want, auxstore_code_name(want), msg);
    exit(1);
  }
  if (want != AUXSTORE_OK && (g_err == NULL || strstr(g_err, needle) == NULL)) {
    fprintf(stderr, "line %d: %s: message '%s' lacks '%s'\n", line, what, msg, needle);
    exit(1);
  }
  auxstore_free(g_err);
  g_err = NULL;
}

#define EXPECT_TRUE(cond)                                                  \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "%s:%d: expected: %s\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                             \
    }                                                                      \
  } while (0)

/* Runs fn(arg) in a child process. 0 when it exited 0; else prints how it
 * ended and returns 1. */
static int run_child(const char* name, void (*fn)(void* arg), void* arg) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    return 1;
  }
  if (pid == 0) {
    fn(arg);
    fflush(stdout);
    fflush(stderr);
    _exit(0);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) {
    perror("waitpid");
    return 1;
  }
  if (WIFSIGNALED(status)) {
    fprintf(stderr, "FAIL %s: killed by signal %d (%s)\n", name, WTERMSIG(status),
            strsignal(WTERMSIG(status)));
    return 1;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "FAIL %s: exit status %d\n", name, WEXITSTATUS(status));
    return 1;
  }
  return 0;
}

/* `auxstore verify DIR` (the CLI built with the tests) exits 0. */
static int verify_store(const char* dir) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' verify '%s' >/dev/null", AUXSTORE_CLI_BINARY, dir);
  int rc = system(cmd);
  if (rc != 0) {
    fprintf(stderr, "FAIL: auxstore verify %s: status %d\n", dir, rc);
    return 1;
  }
  return 0;
}

static void remove_tree(const char* dir) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

#endif /* AUXSTORE_TESTS_CAPI_CHILD_CASE_H_ */

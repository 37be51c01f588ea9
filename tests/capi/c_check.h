/* The C tests' checks: CHECK counts a failed condition; CHECK_ERR checks a
 * call's code and that its message names `needle` (then frees it). Each test
 * file includes this once (the state is per file). */
#ifndef AUXSTORE_TESTS_CAPI_C_CHECK_H
#define AUXSTORE_TESTS_CAPI_C_CHECK_H

#include <stdio.h>
#include <string.h>

#include "auxstore/c.h"

static int g_failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                            \
    }                                                                          \
  } while (0)

static char* err = NULL;

/* The call returned `want`, with a message containing `needle`. Frees it. */
static void check_err(int got, int want, const char* needle, int line) {
  if (got != want) {
    fprintf(stderr, "line %d: code %d (%s), want %d (%s); message: %s\n", line, got,
            auxstore_code_name(got), want, auxstore_code_name(want), err ? err : "(none)");
    ++g_failures;
  } else if (want != AUXSTORE_OK && (err == NULL || strstr(err, needle) == NULL)) {
    fprintf(stderr, "line %d: message '%s' lacks '%s'\n", line, err ? err : "(none)", needle);
    ++g_failures;
  }
  auxstore_free(err);
  err = NULL;
}
#define CHECK_ERR(call, want, needle) check_err((call), (want), (needle), __LINE__)
#define CHECK_OK(call) CHECK_ERR(call, AUXSTORE_OK, "")

#endif

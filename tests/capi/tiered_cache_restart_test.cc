// examples/tiered_prefix_cache across a SIGKILL: the first process fills its
// memory tier, writes evicted sequences behind to the store and is killed;
// a second process gets store hits for exactly those, restored bit-exact,
// and misses for the ones that only lived in the dead process's memory.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/test_util.h"

namespace {

constexpr int kSequences = 12;
constexpr int kMemory = 4;

std::vector<std::string> Args(const std::string& mode, const std::string& dir) {
  return {TIERED_CACHE_BIN, mode,
          "--store",        dir,
          "--sequences",    std::to_string(kSequences),
          "--memory",       std::to_string(kMemory)};
}

// Starts the example with stdout on a pipe.
pid_t Spawn(std::vector<std::string> args, FILE** out) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  *out = fdopen(fds[0], "r");
  return pid;
}

bool ReadLine(FILE* f, std::string* line) {
  line->clear();
  for (int c; (c = std::fgetc(f)) != EOF;) {
    if (c == '\n') return true;
    line->push_back(static_cast<char>(c));
  }
  return !line->empty();
}

struct Lookup {
  std::string tier;
  uint64_t tokens = 0;
  std::string exact;
};

TEST(TieredCacheRestartTest, SurvivesSigkillWithBitExactStoreHits) {
  auxstore::testing::TempDir dir;
  const std::string store = dir.Sub("store");

  // Process 1: populate, then hold until killed.
  FILE* out = nullptr;
  auto args = Args("populate", store);
  args.push_back("--hold");
  const pid_t first = Spawn(args, &out);
  ASSERT_GT(first, 0);
  std::map<int, uint64_t> persisted;  // sequence -> tokens
  bool ready = false;
  for (std::string line; !ready && ReadLine(out, &line);) {
    std::istringstream in(line);
    std::string word;
    in >> word;
    if (word == "ready") ready = true;
    if (word == "persisted") {
      int seq = -1;
      uint64_t tokens = 0;
      in >> seq >> tokens;
      persisted[seq] = tokens;
    }
  }
  ASSERT_TRUE(ready) << "the populate process ended without printing ready";
  ASSERT_EQ(kill(first, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(first, &status, 0), first);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  std::fclose(out);
  // 12 inserts into 4 memory entries: the 8 oldest were evicted and written.
  ASSERT_EQ(persisted.size(), size_t{kSequences - kMemory});
  for (int i = 0; i < kSequences - kMemory; ++i) EXPECT_TRUE(persisted.contains(i)) << i;

  // Process 2: a fresh memory tier; hits can only come from the store.
  const pid_t second = Spawn(Args("query", store), &out);
  ASSERT_GT(second, 0);
  std::map<int, Lookup> lookups;
  std::string again;
  for (std::string line; ReadLine(out, &line);) {
    std::istringstream in(line);
    std::string word;
    in >> word;
    if (word == "lookup") {
      int seq = -1;
      Lookup l;
      in >> seq >> l.tier >> l.tokens >> l.exact;
      lookups[seq] = l;
    } else if (word == "again") {
      int seq = -1;
      in >> seq >> again;
    }
  }
  std::fclose(out);
  ASSERT_EQ(waitpid(second, &status, 0), second);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  ASSERT_EQ(lookups.size(), size_t{kSequences});
  for (const auto& [seq, l] : lookups) {
    if (persisted.contains(seq)) {
      EXPECT_EQ(l.tier, "store") << "sequence " << seq;
      EXPECT_EQ(l.tokens, persisted.at(seq)) << "sequence " << seq;
      EXPECT_EQ(l.exact, "exact=1") << "sequence " << seq;
    } else {
      EXPECT_EQ(l.tier, "miss") << "sequence " << seq << " lived only in the killed process";
    }
  }
  EXPECT_EQ(again, "memory") << "a store hit is promoted to the memory tier";
}

}  // namespace

// What the shared-tier store tests (shared_store_test, shared_store_child)
// share: a conversation whose snapshots of its first n tokens are chained
// (the rows of n tokens are the same in every longer snapshot), and a child
// process with a pipe on its stdin and one on its stdout.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "auxstore/blob_codecs.h"
#include "auxstore/prefix.h"
#include "auxstore/store.h"
#include "tests/support/test_util.h"

extern char** environ;

namespace auxstore::sharedtest {

inline constexpr uint32_t kBlock = 64;  // tokens per block, and per page

class Conversation {
 public:
  explicit Conversation(uint64_t seed, uint64_t max_tokens = 1024)
      : spec_(testing::TestSpec("shared-tier")),
        keys_(testing::RandomBytes(max_tokens * spec_.qsa.hd * 2, seed)),
        k_(testing::RandomBytes(max_tokens * spec_.dsa.index_head_dim * 2, seed + 1)),
        g_(testing::RandomBytes(max_tokens * spec_.dsa.index_head_dim * 2, seed + 2)),
        v_(testing::RandomBytes(max_tokens, seed + 3)) {
    for (uint64_t t = 0; t < max_tokens; ++t) tokens_.push_back(static_cast<uint32_t>(seed + t));
  }
  const NamespaceSpec& spec() const { return spec_; }

  // Layer 0 QSA, layer 1 DSA, layer 2 opaque, of the first n tokens.
  std::vector<std::vector<uint8_t>> Blobs(uint64_t n) const {
    const uint64_t row = uint64_t{spec_.dsa.index_head_dim} * 2;
    return {EncodeQsaBlob(n, n / spec_.qsa.ratio, ByteSpan(keys_).first(n * spec_.qsa.hd * 2),
                          spec_.qsa.hd)
                .value(),
            EncodeDsaBlob(n, spec_.dsa.index_head_dim, ByteSpan(k_).first(n * row),
                          ByteSpan(g_).first(n * row), ByteSpan(v_).first(n))
                .value(),
            std::vector<uint8_t>(v_.begin(), v_.begin() + static_cast<ptrdiff_t>(n))};
  }
  std::vector<Prefix> Chain(uint64_t n) const {
    return PrefixHashes(std::span(tokens_).first(n), kBlock, 0);
  }
  Prefix PrefixOf(uint64_t n) const { return Chain(n).back(); }

  Status Put(Store& store, NamespaceId ns, uint64_t n) const {
    auto blobs = Blobs(n);
    const std::vector<LayerBlob> layers{
        {0, Kind::kQsa, blobs[0]}, {1, Kind::kDsa, blobs[1]}, {2, Kind::kOpaque, blobs[2]}};
    const auto chain = Chain(n);
    PutOptions o;
    o.block_chain = chain;
    o.block_size = kBlock;
    return store.PutSnapshot(ns, PrefixOf(n), n, layers, o);
  }
  // OK when every layer of the snapshot of n tokens reads back exact.
  Status Check(Store& store, NamespaceId ns, uint64_t n) const {
    auto blobs = Blobs(n);
    for (uint32_t l = 0; l < blobs.size(); ++l) {
      auto got = store.GetLayer(ns, PrefixOf(n), l);
      if (!got.ok()) return got.status();
      if (*got != blobs[l]) {
        return Status::Corruption("layer " + std::to_string(l) + " of " + std::to_string(n) +
                                  " tokens differs");
      }
    }
    return Status::Ok();
  }

 private:
  NamespaceSpec spec_;
  std::vector<uint8_t> keys_, k_, g_, v_;
  std::vector<uint32_t> tokens_;
};

inline Result<std::unique_ptr<Store>> OpenShared(const std::string& dir, const std::string& uri,
                                                 SharedWrite mode = SharedWrite::kThrough) {
  Options o;
  o.shared = uri;
  o.shared_write = mode;
  o.background_maintenance = false;
  return Store::Open(o, dir);
}

// A child process: its stdin and stdout on pipes.
struct Child {
  pid_t pid = -1;
  FILE* in = nullptr;   // its stdin
  FILE* out = nullptr;  // its stdout

  static Child Spawn(const std::vector<std::string>& args) {
    int to[2], from[2];
    Child c;
    if (pipe(to) != 0 || pipe(from) != 0) return c;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, from[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, to[1]);
    posix_spawn_file_actions_addclose(&fa, from[0]);
    std::vector<char*> argv{const_cast<char*>(AUXSTORE_SHARED_CHILD)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    if (posix_spawn(&c.pid, AUXSTORE_SHARED_CHILD, &fa, nullptr, argv.data(), environ) != 0) {
      c.pid = -1;
    }
    posix_spawn_file_actions_destroy(&fa);
    close(to[0]);
    close(from[1]);
    c.in = fdopen(to[1], "w");
    c.out = fdopen(from[0], "r");
    return c;
  }
  // The next line it printed ("" at its end).
  std::string Line() {
    char buf[512];
    if (!std::fgets(buf, sizeof buf, out)) return "";
    std::string s(buf);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }
  void Say(const std::string& line) {
    std::fputs((line + "\n").c_str(), in);
    std::fflush(in);
  }
  void Kill() { ::kill(pid, SIGKILL); }
  // Its exit status (128 + signal when killed).
  int Wait() {
    if (in) std::fclose(in), in = nullptr;
    int st = 0;
    waitpid(pid, &st, 0);
    if (out) std::fclose(out), out = nullptr;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
};

}  // namespace auxstore::sharedtest

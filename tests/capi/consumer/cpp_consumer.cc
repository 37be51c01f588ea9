// Uses the installed C++ libraries: a store round trip and a host restore.
#include <cstdio>
#include <string>
#include <vector>

#include "auxstore/gpu_backend.h"
#include "auxstore/seq_state.h"
#include "auxstore/store.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: cpp_consumer <store dir>\n");
    return 2;
  }
  auto fail = [](const auxstore::Status& st) {
    std::fprintf(stderr, "cpp_consumer: %s\n", st.ToString().c_str());
    return 1;
  };
  auto store = auxstore::Store::Open({}, argv[1]);
  if (!store.ok()) return fail(store.status());
  auto ns = (*store)->RegisterNamespace({"consumer++", {}, {}});
  if (!ns.ok()) return fail(ns.status());
  const std::vector<uint32_t> tokens(64, 7);
  const auto prefixes = auxstore::PrefixHashes(tokens, 16, 3);
  const std::vector<uint8_t> blob(1000, 0xab);
  const auxstore::LayerBlob layer{4, auxstore::Kind::kOpaque, blob};
  if (auto st = (*store)->PutSnapshot(*ns, prefixes.back(), 64, {&layer, 1}); !st.ok()) {
    return fail(st);
  }
  auto got = (*store)->GetLayer(*ns, prefixes.back(), 4);
  if (!got.ok()) return fail(got.status());

  // The bytes through a device state on the host backend, and back.
  auto gpu = auxstore::CreateBackend(auxstore::BackendKind::kHost);
  if (!gpu.ok()) return fail(gpu.status());
  auto state = auxstore::OpaqueSeqState::Create(**gpu, 4096);
  if (!state.ok()) return fail(state.status());
  if (auto st = (*state)->Restore(*got, auxstore::kDefaultStream); !st.ok()) return fail(st);
  auto back = (*state)->Snapshot(auxstore::kDefaultStream);
  if (!back.ok()) return fail(back.status());
  const bool same = *back == blob;
  std::printf("cpp_consumer: %s\n", same ? "round trip ok" : "MISMATCH");
  return same ? 0 : 1;
}

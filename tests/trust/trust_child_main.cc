// auxstore_trust_child: one scripted action on a store through the public C
// ABI (include/auxstore/c.h, libauxstore_c.so), reported on stdout one line
// per event, each in a single write() so a SIGKILL never leaves half a line
// that looks whole. The trust tests run it as a child process: a crash here
// (abort, segfault) is what they look for.
//
//   auxstore_trust_child CMD --store DIR [options]
//
// CMD:
//   open     open, report, close.
//   put      open; register the battery namespace; put --seeds (or, with
//            --until-fail, seeds from --seed-start on until a put fails);
//            then --erase SEED; then --hang (wait to be killed) or close.
//   read     open; for each of --seeds: get_manifest and get_layer of every
//            layer, compared with the deterministic spec; --restore SEED:
//            one restore through a pipeline on the host backend; close.
//   erase-unknown  open; stats; erase a prefix never stored; stats; close.
//
// Options: --ro (read-only), --no-create, --async, --chunk-bytes N,
//   --profile P (trust_spec.h; default battery), --seeds 1,2,5-9,
//   --seed-start N, --until-fail, --erase SEED, --hang, --restore SEED,
//   --wait-fd FD (block reading FD until EOF before opening: a common start),
//   --pace-fd FD (put: read one byte from FD before each put; EOF stops),
//   --delay-us N (sleep N us after --wait-fd: staggers two starts).
//
// Lines:
//   OPEN OK | OPEN <code> <CodeName> <message>
//   A <seed>                                put acknowledged (AUXSTORE_OK)
//   E <seed> <code> <CodeName> <message>    put failed
//   ERASED <seed> | ERASEFAIL <seed> <code> <CodeName> <message>
//   R <seed> exact | absent <msg> | error <code> <CodeName> <msg> | WRONG <what>
//   RESTORE <seed> exact | error <code> <CodeName> <msg> | WRONG <what>
//   STATS <field=value ...>
//   ERASE-UNKNOWN <code> <CodeName> <message>
//   HANG | CLOSED
// Exit 0 when the script ran (whatever the store answered), 1 on bad usage.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/trust/trust_capi.h"

namespace {

using namespace auxstore::trust;

void Say(const std::string& line) {
  std::string l;
  for (char c : line) l += c == '\n' ? ' ' : c;
  l += "\n";
  (void)!::write(STDOUT_FILENO, l.data(), l.size());
}

struct Args {
  std::string cmd, store, profile = "battery";
  bool ro = false, no_create = false, async = false, until_fail = false, hang = false;
  uint32_t chunk_bytes = 0;
  std::vector<uint64_t> seeds;
  uint64_t seed_start = 1;
  int64_t erase = -1, restore = -1;
  int wait_fd = -1;
  int pace_fd = -1;
  uint64_t delay_us = 0;  // after --wait-fd, before opening  // put: one byte read from it before
                          // each put; EOF ends the puts
};

bool ParseSeeds(const std::string& s, std::vector<uint64_t>* out) {
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    const std::string part = s.substr(i, j - i);
    const size_t dash = part.find('-');
    if (dash == std::string::npos) {
      out->push_back(std::strtoull(part.c_str(), nullptr, 10));
    } else {
      const uint64_t a = std::strtoull(part.substr(0, dash).c_str(), nullptr, 10);
      const uint64_t b = std::strtoull(part.substr(dash + 1).c_str(), nullptr, 10);
      for (uint64_t x = a; x <= b; ++x) out->push_back(x);
    }
    i = j + 1;
  }
  return true;
}

bool Parse(int argc, char** argv, Args* a) {
  if (argc < 2) return false;
  a->cmd = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    auto val = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (k == "--store") {
      a->store = val();
    } else if (k == "--profile") {
      a->profile = val();
    } else if (k == "--ro") {
      a->ro = true;
    } else if (k == "--no-create") {
      a->no_create = true;
    } else if (k == "--async") {
      a->async = true;
    } else if (k == "--until-fail") {
      a->until_fail = true;
    } else if (k == "--hang") {
      a->hang = true;
    } else if (k == "--chunk-bytes") {
      a->chunk_bytes = static_cast<uint32_t>(std::strtoul(val().c_str(), nullptr, 10));
    } else if (k == "--seeds") {
      ParseSeeds(val(), &a->seeds);
    } else if (k == "--seed-start") {
      a->seed_start = std::strtoull(val().c_str(), nullptr, 10);
    } else if (k == "--erase") {
      a->erase = std::strtoll(val().c_str(), nullptr, 10);
    } else if (k == "--restore") {
      a->restore = std::strtoll(val().c_str(), nullptr, 10);
    } else if (k == "--wait-fd") {
      a->wait_fd = std::atoi(val().c_str());
    } else if (k == "--delay-us") {
      a->delay_us = std::strtoull(val().c_str(), nullptr, 10);
    } else if (k == "--pace-fd") {
      a->pace_fd = std::atoi(val().c_str());
    } else {
      return false;
    }
  }
  return !a->store.empty() && MakeProfile(a->profile, 1).has_value();
}

auxstore_t* OpenOrSay(const Args& a) {
  auxstore_options_t* o = auxstore_options_create();
  char* msg = nullptr;
  if (a.ro) auxstore_options_set_read_only(o, 1, &msg);
  if (a.no_create) auxstore_options_set_create_if_missing(o, 0, &msg);
  if (a.async) auxstore_options_set_durability(o, AUXSTORE_ASYNC, &msg);
  if (a.chunk_bytes) auxstore_options_set_chunk_bytes(o, a.chunk_bytes, &msg);
  auxstore_t* db = nullptr;
  const int rc = auxstore_open(a.store.c_str(), o, &db, &msg);
  auxstore_options_destroy(o);
  if (rc != AUXSTORE_OK) {
    Say("OPEN " + Err(rc, msg));
    auxstore_free(msg);
    return nullptr;
  }
  auxstore_free(msg);
  Say("OPEN OK");
  return db;
}

std::string Restore(auxstore_t* db, uint64_t ns, const SnapshotSpec& want) {
  char* msg = nullptr;
  auxstore_backend_t* backend = nullptr;
  int rc = auxstore_backend_create(AUXSTORE_BACKEND_HOST, &backend, &msg);
  if (rc != AUXSTORE_OK) {
    std::string r = "error " + Err(rc, msg) + " (backend_create)";
    auxstore_free(msg);
    return r;
  }
  const auxstore_geometry_t g = BatteryGeometry();
  std::vector<uint8_t> weights(g.qsa_hd * 2, 0x3f);
  std::vector<auxstore_state_t*> states;
  std::vector<auxstore_restore_target_t> targets;
  std::string result;
  for (const auto& l : want.layers) {
    auxstore_state_t* st = nullptr;
    if (l.kind == auxstore::Kind::kQsa) {
      rc = auxstore_qsa_state_create(backend, &g, weights.data(), weights.data(), &st, &msg);
    } else if (l.kind == auxstore::Kind::kDsa) {
      rc = auxstore_dsa_state_create(backend, &g, &st, &msg);
    } else {
      rc = auxstore_opaque_state_create(backend, l.bytes.size() + 1, &st, &msg);
    }
    if (rc != AUXSTORE_OK) {
      result = "error " + Err(rc, msg) + " (state_create)";
      break;
    }
    states.push_back(st);
    targets.push_back({l.layer, st});
  }
  auxstore_pipeline_t* p = nullptr;
  if (result.empty()) {
    rc = auxstore_pipeline_create(db, backend, &p, &msg);
    if (rc != AUXSTORE_OK) result = "error " + Err(rc, msg) + " (pipeline_create)";
  }
  if (result.empty()) {
    rc = auxstore_restore_wait(p, ns, want.prefix.bytes.data(), targets.data(), targets.size(),
                               &msg);
    if (rc != AUXSTORE_OK) result = "error " + Err(rc, msg) + " (restore_wait)";
  }
  auxstore_pipeline_destroy(p);
  for (size_t i = 0; result.empty() && i < states.size(); ++i) {
    void* data = nullptr;
    size_t size = 0;
    rc = auxstore_state_read(states[i], &data, &size, &msg);
    if (rc != AUXSTORE_OK) {
      result = "error " + Err(rc, msg) + " (state_read)";
      break;
    }
    const auto& l = want.layers[i];
    const bool same =
        size == l.bytes.size() && (size == 0 || std::memcmp(data, l.bytes.data(), size) == 0);
    auxstore_free(data);
    if (!same) result = "WRONG restored layer " + std::to_string(l.layer) + " differs";
  }
  for (auto* st : states) (void)auxstore_state_release(st, nullptr);
  auxstore_backend_destroy(backend);
  auxstore_free(msg);
  return result.empty() ? "exact" : result;
}

std::string StatsLine(auxstore_t* db) {
  auxstore_stats_t s{};
  char* msg = nullptr;
  const int rc = auxstore_stats(db, &s, &msg);
  if (rc != AUXSTORE_OK) {
    std::string r = "error " + Err(rc, msg);
    auxstore_free(msg);
    return r;
  }
  auto f = [](const char* k, uint64_t v) { return std::string(k) + "=" + std::to_string(v) + " "; };
  return f("snapshots", s.snapshots) + f("payload_bytes", s.payload_bytes) + f("puts", s.puts) +
         f("duplicate_puts", s.duplicate_puts) + f("evictions", s.evictions) +
         f("expirations", s.expirations) + f("quarantines", s.quarantines) +
         f("orphans_seen", s.orphans_seen) + f("orphans_removed", s.orphans_removed) +
         f("commit_seq", s.commit_seq) + f("durable_watermark", s.durable_watermark) +
         f("lost_commits_at_open", s.lost_commits_at_open) + f("fenced", s.fenced);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!Parse(argc, argv, &a)) {
    std::fprintf(stderr, "usage: %s open|put|read|erase-unknown --store DIR [options]\n", argv[0]);
    return 1;
  }
  if (a.wait_fd >= 0) {
    char c;
    while (::read(a.wait_fd, &c, 1) > 0) {
    }
    ::close(a.wait_fd);
  }
  if (a.delay_us > 0) ::usleep(static_cast<useconds_t>(a.delay_us));
  auxstore_t* db = OpenOrSay(a);
  if (!db) return 0;
  const uint64_t ns = BatteryNs();
  char* msg = nullptr;

  if (a.cmd == "put") {
    const auxstore_geometry_t g = BatteryGeometry();
    uint64_t got_ns = 0;
    int rc = auxstore_register_namespace(db, "reliability-battery", &g, &got_ns, &msg);
    if (rc != AUXSTORE_OK || got_ns != ns) {
      Say("E 0 " + Err(rc, msg) + " (register_namespace)");
    } else {
      std::vector<uint64_t> seeds = a.seeds;
      for (uint64_t k = 0;; ++k) {
        uint64_t seed;
        if (a.pace_fd >= 0) {
          char token;
          if (::read(a.pace_fd, &token, 1) != 1) break;
        }
        if (a.until_fail) {
          seed = a.seed_start + k;
        } else if (k < seeds.size()) {
          seed = seeds[k];
        } else {
          break;
        }
        const SnapshotSpec s = *MakeProfile(a.profile, seed);
        const auto layers = CLayers(s);
        rc = auxstore_put_snapshot(db, ns, s.prefix.bytes.data(), s.token_count, layers.size(),
                                   layers.data(), &msg);
        if (rc == AUXSTORE_OK) {
          Say("A " + std::to_string(seed));
        } else {
          Say("E " + std::to_string(seed) + " " + Err(rc, msg));
          break;
        }
      }
      if (a.erase >= 0) {
        const SnapshotSpec s = *MakeProfile(a.profile, static_cast<uint64_t>(a.erase));
        rc = auxstore_erase(db, ns, s.prefix.bytes.data(), &msg);
        if (rc == AUXSTORE_OK) {
          Say("ERASED " + std::to_string(a.erase));
        } else {
          Say("ERASEFAIL " + std::to_string(a.erase) + " " + Err(rc, msg));
        }
      }
    }
    if (a.hang) {
      Say("HANG");
      for (;;) ::pause();
    }
  } else if (a.cmd == "read") {
    Say("STATS " + StatsLine(db));  // before and after: what the reads quarantined
    for (uint64_t seed : a.seeds) {
      Say("R " + std::to_string(seed) + " " + ReadSeed(db, ns, *MakeProfile(a.profile, seed)));
    }
    if (a.restore >= 0) {
      Say("RESTORE " + std::to_string(a.restore) + " " +
          Restore(db, ns, *MakeProfile(a.profile, static_cast<uint64_t>(a.restore))));
    }
    Say("STATS " + StatsLine(db));
  } else if (a.cmd == "erase-unknown") {
    Say("STATS " + StatsLine(db));
    uint8_t prefix[16];
    for (int i = 0; i < 16; ++i) prefix[i] = static_cast<uint8_t>(0xA5 ^ (i * 37));
    const int rc = auxstore_erase(db, ns, prefix, &msg);
    Say("ERASE-UNKNOWN " + (rc == AUXSTORE_OK ? std::string("0 OK") : Err(rc, msg)));
    Say("STATS " + StatsLine(db));
  } else if (a.cmd != "open") {
    std::fprintf(stderr, "unknown command %s\n", a.cmd.c_str());
  }
  auxstore_free(msg);
  auxstore_close(db);
  Say("CLOSED");
  return 0;
}

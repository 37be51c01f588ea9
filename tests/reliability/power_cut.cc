#include "tests/reliability/power_cut.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <vector>

namespace auxstore::reliability {
namespace {

struct FileState {
  uint64_t synced = 0;        // bytes known to be on disk
  bool entry_durable = true;  // its directory entry survives a cut
  std::string shadow = "-";   // copy of the file a rename replaced
  std::string renamed_from;   // a rename's source, if that entry was durable
};

constexpr uint64_t kAll = std::numeric_limits<uint64_t>::max();

std::string Parent(const std::string& p) { return std::filesystem::path(p).parent_path().string(); }

// Replays the event log into the state every file is in at the cut.
std::map<std::string, FileState> Replay(const std::string& event_log_path) {
  std::map<std::string, FileState> files;
  std::ifstream in(event_log_path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    char op = 0;
    ls >> op;
    if (op == 'C' || op == 'O') {
      int existed = 0;
      uint64_t size = 0;
      std::string path;
      ls >> existed >> size >> path;
      // A reopened file ('O') keeps what it had; a new or truncated one has
      // nothing. An entry this log already tracks stays as durable as it was
      // (RocksDB reopens a just-linked ingested file to sync it).
      auto it = files.find(path);
      if (it != files.end()) {
        if (op == 'C') it->second.synced = 0;
      } else {
        files[path] = {op == 'O' ? size : 0, existed != 0, "-", ""};
      }
    } else if (op == 'S' || op == 'T') {
      uint64_t size = 0;
      std::string path;
      ls >> size >> path;
      auto it = files.find(path);
      if (it == files.end()) {
        files[path] = {op == 'S' ? size : kAll, true, "-", ""};
      } else if (op == 'S') {
        it->second.synced = size;
      } else {
        it->second.synced = std::min(it->second.synced, size);
      }
    } else if (op == 'R' || op == 'L') {
      std::string shadow = "-", src, dst;
      if (op == 'R') ls >> shadow;
      ls >> src >> dst;
      auto it = files.find(src);
      FileState st = it == files.end() ? FileState{kAll, true, "-", ""} : it->second;
      const bool src_durable = it == files.end() || it->second.entry_durable;
      st.entry_durable = false;
      st.shadow = shadow;
      st.renamed_from = op == 'R' && src_durable ? src : "";
      if (op == 'R' && it != files.end()) files.erase(it);
      files[dst] = st;
    } else if (op == 'D') {
      std::string path;
      ls >> path;
      files.erase(path);
    } else if (op == 'Y') {
      std::string dir;
      ls >> dir;
      for (auto& [path, st] : files) {
        if (Parent(path) == dir) {
          st.entry_durable = true;
          st.shadow = "-";
          st.renamed_from.clear();
        }
      }
    }
  }
  return files;
}

// The entry never reached the disk: the file goes, what it replaced comes
// back, and a renamed file is found under its old name again.
void DropEntry(const std::string& path, const FileState& st, PowerCutReport* r) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!st.renamed_from.empty() && !fs::exists(st.renamed_from, ec)) {
    fs::rename(path, st.renamed_from, ec);
  } else {
    fs::remove(path, ec);
  }
  ++r->files_removed;
  r->changes += "  entry dropped: " + path + "\n";
  if (st.shadow != "-" && fs::exists(st.shadow, ec)) {
    fs::copy_file(st.shadow, path, fs::copy_options::overwrite_existing, ec);
    ++r->files_restored;
  }
}

// What a cut leaves of the bytes past the last sync: nothing, a prefix, all
// of it, or a prefix with garbage over part of it.
void CutTail(const std::string& path, uint64_t synced, uint64_t size, const PowerCutModel& model,
             std::mt19937_64& rng, PowerCutReport* r) {
  std::error_code ec;
  const uint64_t tail = size - synced;
  const unsigned pick = model.tails ? rng() % 10 : 0;
  if (pick < 4) {  // dropped whole
    std::filesystem::resize_file(path, synced, ec);
    ++r->files_truncated;
    r->bytes_dropped += tail;
    r->changes += "  tail of " + std::to_string(tail) + " dropped: " + path + "\n";
    return;
  }
  const uint64_t keep = pick < 6 ? tail : 1 + rng() % tail;  // all, or any prefix
  if (keep < tail) {
    std::filesystem::resize_file(path, synced + keep, ec);
    r->bytes_dropped += tail - keep;
  }
  ++r->tails_kept;
  r->changes += "  " + std::to_string(keep) + " of a " + std::to_string(tail) +
                "-byte tail kept after " + std::to_string(synced) + ": " + path + "\n";
  if (pick < 8) return;
  // Garbage over [from, to) of the kept tail: random bytes or zeros.
  const uint64_t from = synced + rng() % keep;
  const uint64_t to = from + 1 + rng() % (synced + keep - from);
  std::vector<char> junk(to - from, 0);
  if (rng() % 2) {
    for (char& c : junk) c = static_cast<char>(rng());
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  if (::pwrite(fd, junk.data(), junk.size(), static_cast<off_t>(from)) ==
      static_cast<ssize_t>(junk.size())) {
    ++r->tails_garbled;
    r->garbage_bytes += junk.size();
    r->changes += "    garbage over [" + std::to_string(from) + ", " + std::to_string(to) + ")\n";
  }
  ::close(fd);
}

}  // namespace

std::string PowerCutReport::Summary() const {
  return "truncated " + std::to_string(files_truncated) + " files (" +
         std::to_string(bytes_dropped) + " bytes dropped), kept " + std::to_string(tails_kept) +
         " unsynced tails (" + std::to_string(tails_garbled) + " with " +
         std::to_string(garbage_bytes) + " bytes of garbage), removed " +
         std::to_string(files_removed) + ", restored " + std::to_string(files_restored) +
         ", kept " + std::to_string(entries_kept) + " unsynced entries";
}

PowerCutReport ApplyPowerCut(const std::string& event_log_path, const PowerCutModel& model) {
  namespace fs = std::filesystem;
  std::mt19937_64 rng(model.seed);
  PowerCutReport r;
  for (const auto& [path, st] : Replay(event_log_path)) {
    std::error_code ec;
    if (!fs::exists(path, ec)) continue;
    if (model.harsh && !st.entry_durable) {
      if (rng() % 2 == 0) {
        DropEntry(path, st, &r);
        continue;
      }
      ++r.entries_kept;
      r.changes += "  entry kept: " + path + "\n";
    }
    const uint64_t size = fs::file_size(path, ec);
    if (!ec && st.synced != kAll && size > st.synced)
      CutTail(path, st.synced, size, model, rng, &r);
  }
  ::sync();
  return r;
}

}  // namespace auxstore::reliability

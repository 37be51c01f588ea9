#include "tests/reliability/power_cut.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

namespace auxstore::reliability {
namespace {

struct FileState {
  uint64_t synced = 0;        // bytes known to be on disk
  bool entry_durable = true;  // its directory entry survives a cut
  std::string shadow = "-";   // copy of the file a rename replaced
};

constexpr uint64_t kAll = std::numeric_limits<uint64_t>::max();

std::string Parent(const std::string& p) { return std::filesystem::path(p).parent_path().string(); }

}  // namespace

std::string PowerCutReport::Summary() const {
  return "truncated " + std::to_string(files_truncated) + " files (" +
         std::to_string(bytes_dropped) + " bytes dropped), removed " +
         std::to_string(files_removed) + ", restored " + std::to_string(files_restored);
}

PowerCutReport ApplyPowerCut(const std::string& event_log_path, bool harsh) {
  namespace fs = std::filesystem;
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
        files[path] = {op == 'O' ? size : 0, existed != 0, "-"};
      }
    } else if (op == 'S' || op == 'T') {
      uint64_t size = 0;
      std::string path;
      ls >> size >> path;
      auto it = files.find(path);
      if (it == files.end()) {
        files[path] = {op == 'S' ? size : kAll, true, "-"};
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
      FileState st = it == files.end() ? FileState{kAll, true, "-"} : it->second;
      st.entry_durable = false;
      st.shadow = shadow;
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
        }
      }
    }
  }

  PowerCutReport r;
  for (const auto& [path, st] : files) {
    std::error_code ec;
    if (!fs::exists(path, ec)) continue;
    if (harsh && !st.entry_durable) {
      fs::remove(path, ec);
      ++r.files_removed;
      if (st.shadow != "-" && fs::exists(st.shadow, ec)) {
        fs::copy_file(st.shadow, path, fs::copy_options::overwrite_existing, ec);
        ++r.files_restored;
      }
      continue;
    }
    const uint64_t size = fs::file_size(path, ec);
    if (!ec && st.synced != kAll && size > st.synced) {
      fs::resize_file(path, st.synced, ec);
      ++r.files_truncated;
      r.bytes_dropped += size - st.synced;
    }
  }
  ::sync();
  return r;
}

}  // namespace auxstore::reliability

#include "tests/trust/trust_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/cycles.h"

namespace auxstore::trust {

namespace fs = std::filesystem;

std::string CliPath() { return AUXSTORE_TRUST_CLI; }
std::string ChildPath() { return AUXSTORE_TRUST_CHILD; }
std::string KillChildPath() { return AUXSTORE_TRUST_KILL_CHILD; }

namespace {
int g_cycles = 0;
}

void SetCycles(int n) { g_cycles = n; }

int Cycles(int fallback) { return testing::CyclesFor(g_cycles, fallback); }

std::string SignalName(int sig) {
  switch (sig) {
    case SIGABRT:
      return "SIGABRT";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGILL:
      return "SIGILL";
    case SIGFPE:
      return "SIGFPE";
    case SIGKILL:
      return "SIGKILL";
    case SIGTERM:
      return "SIGTERM";
    case SIGPIPE:
      return "SIGPIPE";
    default:
      return "signal " + std::to_string(sig);
  }
}

std::string DescribeWait(int st) {
  if (WIFEXITED(st)) return "exit " + std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st)) {
    return "killed by signal " + std::to_string(WTERMSIG(st)) + " (" + SignalName(WTERMSIG(st)) +
           ")";
  }
  return "status " + std::to_string(st);
}

std::string ProcResult::Describe() const {
  if (hung) return "hung (killed after the guard timeout)";
  if (signal != 0) {
    return "killed by signal " + std::to_string(signal) + " (" + SignalName(signal) + ")" +
           (killed_by_us ? " sent by the test" : "");
  }
  return "exit " + std::to_string(exit_code);
}

std::vector<std::string> ProcResult::LinesWith(const std::string& prefix) const {
  std::vector<std::string> out;
  for (const auto& l : lines) {
    if (l.rfind(prefix, 0) == 0) out.push_back(l);
  }
  return out;
}

std::optional<std::string> ProcResult::FirstLineWith(const std::string& prefix) const {
  for (const auto& l : lines) {
    if (l.rfind(prefix, 0) == 0) return l;
  }
  return std::nullopt;
}

std::string ProcResult::ErrTail(size_t max_chars) const {
  if (err.size() <= max_chars) return err;
  return "..." + err.substr(err.size() - max_chars);
}

Child::~Child() {
  if (pid_ > 0 && !waited_) {
    Kill(SIGKILL);
    (void)Wait(60);
  }
}

bool Child::Start(const std::vector<std::string>& argv, const std::vector<int>& inherit) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return false;
  if (::pipe2(err, O_CLOEXEC) != 0) return false;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec.
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    for (int fd : inherit) ::fcntl(fd, F_SETFD, 0);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  pid_ = pid;
  reader_ = std::thread([this, o = out[0], e = err[0]] { Reader(o, e); });
  return true;
}

void Child::Reader(int out_fd, int err_fd) {
  bool out_open = true, err_open = true;
  char buf[65536];
  while (out_open || err_open) {
    pollfd p[2] = {{out_open ? out_fd : -1, POLLIN, 0}, {err_open ? err_fd : -1, POLLIN, 0}};
    if (::poll(p, 2, 1000) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(p[i].fd, buf, sizeof buf);
      if (n <= 0) {
        (i == 0 ? out_open : err_open) = false;
        continue;
      }
      std::lock_guard lock(mu_);
      if (i == 1) {
        err_.append(buf, static_cast<size_t>(n));
        // Keep memory bounded for chatty children.
        if (err_.size() > (4u << 20)) err_.erase(0, err_.size() - (2u << 20));
        continue;
      }
      out_.append(buf, static_cast<size_t>(n));
      partial_.append(buf, static_cast<size_t>(n));
      size_t nl;
      bool any = false;
      while ((nl = partial_.find('\n')) != std::string::npos) {
        lines_.push_back(partial_.substr(0, nl));
        partial_.erase(0, nl + 1);
        any = true;
      }
      if (any) cv_.notify_all();
    }
  }
  ::close(out_fd);
  ::close(err_fd);
  std::lock_guard lock(mu_);
  // A partial last line (cut by a kill) acknowledges nothing: dropped.
  eof_ = true;
  cv_.notify_all();
}

bool Child::WaitForLine(const std::string& prefix, std::string* line, int guard_s) {
  std::unique_lock lock(mu_);
  size_t seen = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(guard_s);
  for (;;) {
    for (; seen < lines_.size(); ++seen) {
      if (lines_[seen].rfind(prefix, 0) == 0) {
        if (line) *line = lines_[seen];
        return true;
      }
    }
    if (eof_) return false;
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) return false;
  }
}

std::vector<std::string> Child::Lines() {
  std::lock_guard lock(mu_);
  return lines_;
}

void Child::Kill(int sig) {
  if (pid_ > 0 && !waited_) {
    if (sig == SIGKILL) killed_ = true;
    ::kill(pid_, sig);
  }
}

ProcResult Child::Wait(int guard_s) {
  if (waited_) return result_;
  ProcResult r;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(guard_s);
  for (;;) {
    const pid_t w = ::waitpid(pid_, &status, WNOHANG);
    if (w == pid_) break;
    if (w < 0 && errno != EINTR) break;
    if (std::chrono::steady_clock::now() > deadline && !r.hung) {
      r.hung = true;
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (reader_.joinable()) reader_.join();
  waited_ = true;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.killed_by_us = killed_;
  std::lock_guard lock(mu_);
  r.lines = lines_;
  r.out = out_;
  r.err = err_;
  result_ = r;
  return r;
}

ProcResult RunProcess(const std::vector<std::string>& argv, const std::string& kill_on_line,
                      int guard_s) {
  Child c;
  if (!c.Start(argv)) {
    ProcResult r;
    r.err = "could not start " + argv[0];
    return r;
  }
  if (!kill_on_line.empty() && c.WaitForLine(kill_on_line, nullptr, guard_s)) c.Kill(SIGKILL);
  return c.Wait(guard_s);
}

ProcResult RunCli(const std::vector<std::string>& args) {
  std::vector<std::string> argv{CliPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv);
}

// ---- files ------------------------------------------------------------------

namespace {

void ListInto(const std::string& root, const std::string& rel, Listing* out) {
  const std::string full = rel == "." ? root : root + "/" + rel;
  struct stat st;
  if (::lstat(full.c_str(), &st) != 0) return;
  Entry e;
  e.mode = st.st_mode & 07777;
  if (S_ISREG(st.st_mode)) {
    e.type = 'f';
    e.size = static_cast<uint64_t>(st.st_size);
  } else if (S_ISDIR(st.st_mode)) {
    e.type = 'd';
  } else if (S_ISLNK(st.st_mode)) {
    e.type = 'l';
  }
  (*out)[rel] = e;
  if (e.type != 'd') return;
  DIR* d = ::opendir(full.c_str());
  if (!d) return;
  std::vector<std::string> names;
  while (dirent* de = ::readdir(d)) {
    const std::string n = de->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  for (const auto& n : names) ListInto(root, rel == "." ? n : rel + "/" + n, out);
}

}  // namespace

Listing List(const std::string& root) {
  Listing l;
  ListInto(root, ".", &l);
  return l;
}

std::string ModeString(unsigned mode) {
  char b[8];
  std::snprintf(b, sizeof b, "%04o", mode);
  return b;
}

static std::string EntryString(const Entry& e) {
  std::string s(1, e.type);
  s += " " + ModeString(e.mode);
  if (e.type == 'f') s += " " + std::to_string(e.size) + " bytes";
  return s;
}

std::string DiffListings(const Listing& before, const Listing& after, bool compare_modes) {
  std::ostringstream d;
  for (const auto& [name, e] : before) {
    auto it = after.find(name);
    if (it == after.end()) {
      d << "  gone:    " << name << " (" << EntryString(e) << ")\n";
      continue;
    }
    const Entry& a = it->second;
    const bool differs = a.type != e.type || (e.type == 'f' && a.size != e.size) ||
                         (compare_modes && a.mode != e.mode);
    if (differs) {
      d << "  changed: " << name << " (" << EntryString(e) << " -> " << EntryString(a) << ")\n";
    }
  }
  for (const auto& [name, a] : after) {
    if (!before.count(name)) d << "  new:     " << name << " (" << EntryString(a) << ")\n";
  }
  return d.str();
}

std::string ListingToString(const Listing& l) {
  std::ostringstream o;
  for (const auto& [name, e] : l) o << "  " << name << " (" << EntryString(e) << ")\n";
  return o.str();
}

bool CopyTree(const std::string& from, const std::string& to, std::string* why) {
  std::error_code ec;
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
  if (ec) {
    if (why) *why = "copy " + from + " -> " + to + ": " + ec.message();
    return false;
  }
  return true;
}

void RemoveTree(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *out = s.str();
  return true;
}

bool WriteFile(const std::string& path, const std::string& data, unsigned mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n <= 0) {
      ::close(fd);
      return false;
    }
    done += static_cast<size_t>(n);
  }
  ::fchmod(fd, mode);
  return ::close(fd) == 0;
}

uint64_t FileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

std::string FileType(const std::string& name) {
  auto ends = [&](const std::string& suf) {
    return name.size() >= suf.size() &&
           name.compare(name.size() - suf.size(), suf.size(), suf) == 0;
  };
  if (ends(".sst")) return "SST";
  if (ends(".log") && name != "LOG") return "WAL";
  if (name.rfind("MANIFEST-", 0) == 0) return "MANIFEST";
  if (name.rfind("OPTIONS-", 0) == 0) return "OPTIONS";
  if (name == "CURRENT") return "CURRENT";
  if (name == "AUXSTORE-WATERMARK") return "WATERMARK";
  return "";
}

std::vector<std::string> FilesOfType(const std::string& dir, const std::string& type) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().filename().string();
    if (FileType(name) == type) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

ScratchDir::ScratchDir(const std::string& tag) {
  std::string tmpl = (fs::temp_directory_path() / ("auxstore-" + tag + "-XXXXXX")).string();
  path_ = ::mkdtemp(tmpl.data()) ? tmpl : std::string();
}

ScratchDir::~ScratchDir() {
  if (!path_.empty()) RemoveTree(path_);
}

std::string SeedList(const std::vector<uint64_t>& seeds) {
  std::string s;
  for (uint64_t x : seeds) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

std::string SeedList(const std::set<uint64_t>& seeds) {
  return SeedList(std::vector<uint64_t>(seeds.begin(), seeds.end()));
}

std::set<uint64_t> SeedsOnLines(const std::vector<std::string>& lines, const std::string& tag) {
  std::set<uint64_t> out;
  for (const auto& l : lines) {
    if (l.rfind(tag + " ", 0) != 0) continue;
    out.insert(std::strtoull(l.c_str() + tag.size() + 1, nullptr, 10));
  }
  return out;
}

ReadReport ParseRead(const ProcResult& r) {
  ReadReport rep;
  for (const auto& l : r.lines) {
    std::istringstream in(l);
    std::string tag;
    in >> tag;
    if (tag == "OPEN") {
      std::string what;
      in >> what;
      if (what == "OK") {
        rep.opened = true;
      } else {
        rep.open_code = std::atoi(what.c_str());
        std::string name;
        in >> name;
        std::getline(in, rep.open_message);
        if (!rep.open_message.empty() && rep.open_message[0] == ' ') rep.open_message.erase(0, 1);
      }
    } else if (tag == "R" || tag == "RESTORE") {
      uint64_t seed = 0;
      ReadVerdict v;
      in >> seed >> v.verdict;
      if (v.verdict == "error") in >> v.code;
      std::getline(in, v.detail);
      if (!v.detail.empty() && v.detail[0] == ' ') v.detail.erase(0, 1);
      if (tag == "R") {
        rep.seeds[seed] = v;
      } else {
        rep.restore = v;
      }
    } else if (tag == "CLOSED") {
      rep.closed = true;
    } else if (tag == "STATS") {
      std::string field;
      while (in >> field) {
        if (field.rfind("quarantines=", 0) != 0) continue;
        const uint64_t n = std::strtoull(field.c_str() + 12, nullptr, 10);
        if (!rep.quarantines_first) rep.quarantines_first = n;
        rep.quarantines_last = n;
      }
    }
  }
  return rep;
}

}  // namespace auxstore::trust

#include "auxstore/log.h"

#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_set>

namespace auxstore {

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "unknown";
}

void LogToStderrOnce(const LogRecord& record) {
  static std::mutex mu;
  static std::unordered_set<std::string>* seen = new std::unordered_set<std::string>();  // leaked
  std::string line = "auxstore[";
  line += LogLevelName(record.level);
  line += "] ";
  line += record.source;
  line += ": ";
  line += record.message;
  std::lock_guard lock(mu);
  if (!seen->insert(line).second) return;
  line += '\n';
  (void)!std::fwrite(line.data(), 1, line.size(), stderr);
}

void Deliver(const LogSink& sink, const LogRecord& record) {
  try {
    if (sink) {
      sink(record);
    } else {
      LogToStderrOnce(record);
    }
  } catch (...) {  // a sink must not throw; if it does, the record is dropped
  }
}

}  // namespace auxstore

// Log records: auxstore's own warnings and RocksDB's info log, delivered to
// the engine instead of to a LOG file nobody reads.
//
// A store (Options::log_sink) or a pipeline gets a sink; without one, records
// go to the process default: stderr, each distinct message once per process.
// A sink may be called from any auxstore or RocksDB thread, at any time
// while the store is open (also from its destructor); it must be thread-safe
// and must not call back into the store. It must not throw.
#pragma once

#include <functional>
#include <string_view>

namespace auxstore {

// Persisted in the C ABI as integers: never renumber.
enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

std::string_view LogLevelName(LogLevel level);  // "debug", "info", "warn", "error"

struct LogRecord {
  LogLevel level = LogLevel::kInfo;
  std::string_view source;   // "auxstore" or "rocksdb"
  std::string_view message;  // one line, no trailing newline
};

using LogSink = std::function<void(const LogRecord&)>;

// Writes `record` to stderr unless a record with the same level, source and
// message was written before in this process.
void LogToStderrOnce(const LogRecord& record);

// Delivers `record` to `sink`, or to LogToStderrOnce when `sink` is empty.
// Never throws: an exception from the sink is swallowed.
void Deliver(const LogSink& sink, const LogRecord& record);

}  // namespace auxstore

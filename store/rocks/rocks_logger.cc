#include "store/rocks/rocks_logger.h"

#include <cstdarg>
#include <cstdio>
#include <string>

namespace auxstore::store_internal {
namespace {

rocksdb::InfoLogLevel ToRocks(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return rocksdb::InfoLogLevel::DEBUG_LEVEL;
    case LogLevel::kInfo:
      return rocksdb::InfoLogLevel::INFO_LEVEL;
    case LogLevel::kWarn:
      return rocksdb::InfoLogLevel::WARN_LEVEL;
    case LogLevel::kError:
      break;
  }
  return rocksdb::InfoLogLevel::ERROR_LEVEL;
}

LogLevel FromRocks(rocksdb::InfoLogLevel level) {
  switch (level) {
    case rocksdb::InfoLogLevel::DEBUG_LEVEL:
      return LogLevel::kDebug;
    case rocksdb::InfoLogLevel::INFO_LEVEL:
    case rocksdb::InfoLogLevel::HEADER_LEVEL:
      return LogLevel::kInfo;
    case rocksdb::InfoLogLevel::WARN_LEVEL:
      return LogLevel::kWarn;
    default:
      return LogLevel::kError;
  }
}

class SinkLogger final : public rocksdb::Logger {
 public:
  SinkLogger(LogSink sink, LogLevel level) : Logger(ToRocks(level)), sink_(std::move(sink)) {}

  using rocksdb::Logger::Logv;
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (level < GetInfoLogLevel() || format == nullptr) return;
    char buf[1024];
    va_list copy;
    va_copy(copy, ap);
    const int n = std::vsnprintf(buf, sizeof buf, format, copy);
    va_end(copy);
    if (n < 0) return;
    std::string_view msg(buf, std::min<size_t>(static_cast<size_t>(n), sizeof buf - 1));
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == '\r')) msg.remove_suffix(1);
    Deliver(sink_, LogRecord{FromRocks(level), "rocksdb", msg});
  }
  // RocksDB prints its options and build information as header lines.
  void LogHeader(const char* format, va_list ap) override {
    Logv(rocksdb::InfoLogLevel::DEBUG_LEVEL, format, ap);
  }

 private:
  LogSink sink_;
};

}  // namespace

std::shared_ptr<rocksdb::Logger> NewSinkLogger(LogSink sink, LogLevel level) {
  return std::make_shared<SinkLogger>(std::move(sink), level);
}

}  // namespace auxstore::store_internal

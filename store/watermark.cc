#include "store/watermark.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>

namespace auxstore::store_internal {
namespace {

std::string Body(uint64_t seq) { return "auxstore-watermark v1 " + std::to_string(seq); }

std::string Line(uint64_t seq) {
  const std::string body = Body(seq);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016" PRIx64, XXH3_64bits(body.data(), body.size()));
  return body + " " + hex + "\n";
}

Status Errno(const std::string& what) {
  return Status::IOError(what + ": " + std::strerror(errno));
}

Status IoError(const std::string& what, const rocksdb::IOStatus& s) {
  return Status::IOError(what + ": " + s.ToString());
}

// A fresh file: whatever is at `path` (a leftover, or a planted symlink) is
// removed first, never followed. Through `fs`, the store's RocksDB file
// system, so every step is seen where RocksDB's own files are (the power-loss
// battery logs and cuts the watermark like any other file).
Status WriteAllAndSync(rocksdb::FileSystem& fs, const std::string& path, const std::string& data) {
  const rocksdb::IOOptions io;
  rocksdb::IOStatus s = fs.DeleteFile(path, io, nullptr);
  if (!s.ok() && !s.IsPathNotFound() && !s.IsNotFound()) return IoError("remove " + path, s);
  std::unique_ptr<rocksdb::FSWritableFile> file;
  s = fs.NewWritableFile(path, rocksdb::FileOptions(), &file, nullptr);
  if (!s.ok()) return IoError("create " + path, s);
  s = file->Append(data, io, nullptr);
  if (s.ok()) s = file->Fsync(io, nullptr);
  rocksdb::IOStatus closed = file->Close(io, nullptr);
  if (!s.ok()) return IoError("write and sync " + path, s);
  if (!closed.ok()) return IoError("close " + path, closed);
  return Status::Ok();
}

Status SyncDir(rocksdb::FileSystem& fs, const std::string& dir) {
  std::unique_ptr<rocksdb::FSDirectory> d;
  rocksdb::IOStatus s = fs.NewDirectory(dir, rocksdb::IOOptions(), &d, nullptr);
  if (s.ok()) s = d->FsyncWithDirOptions(rocksdb::IOOptions(), nullptr, rocksdb::DirFsyncOptions());
  if (s.ok()) s = d->Close(rocksdb::IOOptions(), nullptr);
  return s.ok() ? Status::Ok() : IoError("fsync directory " + dir, s);
}

}  // namespace

Result<uint64_t> ReadWatermark(const std::string& dir) {
  const std::string path = dir + "/" + kWatermarkFileName;
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound("no durable watermark at " + path);
    if (errno == ELOOP) return Status::Corruption("durable watermark " + path + " is a symlink");
    return Errno("open " + path);
  }
  char buf[128] = {};
  const ssize_t got = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (got < 0) return Errno("read " + path);
  const size_t n = static_cast<size_t>(got);
  uint64_t seq = 0;
  if (std::sscanf(buf, "auxstore-watermark v1 %" SCNu64, &seq) != 1 ||
      std::string(buf, n) != Line(seq)) {
    return Status::Corruption("durable watermark " + path + " is damaged");
  }
  return seq;
}

Status WriteWatermark(rocksdb::FileSystem& fs, const std::string& dir, uint64_t seq) {
  const std::string path = dir + "/" + kWatermarkFileName;
  const std::string tmp = path + ".tmp";
  AUXSTORE_RETURN_IF_ERROR(WriteAllAndSync(fs, tmp, Line(seq)));
  rocksdb::IOStatus s = fs.RenameFile(tmp, path, rocksdb::IOOptions(), nullptr);
  if (!s.ok()) return IoError("rename " + tmp, s);
  return SyncDir(fs, dir);
}

Status WriteWatermark(const std::string& dir, uint64_t seq) {
  return WriteWatermark(*rocksdb::FileSystem::Default(), dir, seq);
}

}  // namespace auxstore::store_internal

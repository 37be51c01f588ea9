#include "tools/cli/export_import.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "auxstore/blob_codecs.h"
#include "auxstore/blob_hash.h"
#include "auxstore/store.h"
#include "tools/cli/inspect.h"

namespace auxstore::cli {
namespace {

Status Errno(const std::string& what) {
  return Status::IOError(what + ": " + std::strerror(errno));
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

Status WriteAll(int fd, const uint8_t* p, size_t n, const std::string& name) {
  while (n) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return Errno("write " + name);
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

Status CreateFile(int dirfd, const std::string& dir, const std::string& name,
                  const std::function<Status(int fd)>& fill) {
  Fd fd(::openat(dirfd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.get() < 0) return Errno("create " + dir + "/" + name);
  AUXSTORE_RETURN_IF_ERROR(fill(fd.get()));
  if (::fsync(fd.get()) != 0) return Errno("fsync " + dir + "/" + name);
  return Status::Ok();
}

// Reads a file named by the manifest: inside `dirfd` only, never through a
// symlink, a regular file, exactly `expected` bytes (never more than `max`).
Result<std::vector<uint8_t>> ReadBoundedFile(int dirfd, const std::string& name,
                                             std::optional<uint64_t> expected, uint64_t max) {
  // O_NONBLOCK: opening a FIFO planted under this name must not hang.
  Fd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ELOOP) return Status::InvalidArgument(name + " is a symbolic link; refused");
    return Errno("open " + name);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Errno("stat " + name);
  if (!S_ISREG(st.st_mode))
    return Status::InvalidArgument(name + " is not a regular file; refused");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > max) {
    return Status::InvalidArgument(name + " is " + std::to_string(size) + " bytes, over the " +
                                   std::to_string(max) + "-byte limit");
  }
  if (expected && size != *expected) {
    return Status::InvalidArgument(name + " is " + std::to_string(size) +
                                   " bytes but the manifest says " + std::to_string(*expected));
  }
  std::vector<uint8_t> data(size);
  size_t got = 0;
  while (got < size) {
    ssize_t r = ::read(fd.get(), data.data() + got, size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Errno("read " + name);
    if (r == 0) return Status::InvalidArgument(name + " shrank while being read");
    got += static_cast<size_t>(r);
  }
  return data;
}

Status PrepareExportDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) == 0) return Status::Ok();
  if (errno != EEXIST) return Errno("create " + dir);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec) || !std::filesystem::is_empty(dir, ec)) {
    return Status::InvalidArgument(dir + " exists and is not an empty directory");
  }
  return Status::Ok();
}

}  // namespace

Result<ExportReport> ExportSnapshot(const std::string& store_path, const Prefix& prefix,
                                    std::optional<NamespaceId> ns, const std::string& dir,
                                    const std::string& shared) {
  AUXSTORE_ASSIGN_OR_RETURN(auto store, OpenForReading(store_path, shared));
  AUXSTORE_ASSIGN_OR_RETURN(SnapshotDetail snap, FindSnapshot(*store, prefix, ns));
  AUXSTORE_RETURN_IF_ERROR(PrepareExportDir(dir));
  Fd dirfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dirfd.get() < 0) return Errno("open " + dir);
  ExportReport r{snap.ns, prefix, 0, 0};
  std::vector<std::string> files;
  std::vector<uint64_t> hashes;  // each file's plain XXH3-64 (the store keeps layer digests)
  for (const LayerEntry& l : snap.manifest.layers) {
    const std::string name = "layer-" + std::to_string(l.layer) + ".bin";
    BlobHasher hash;
    AUXSTORE_RETURN_IF_ERROR(CreateFile(dirfd.get(), dir, name, [&](int fd) {
      return store->ReadLayer(snap.ns, prefix, l.layer, [&](uint64_t, ByteSpan chunk) {
        hash.Update(chunk);
        return WriteAll(fd, chunk.data(), chunk.size(), name);
      });
    }));
    files.push_back(name);
    hashes.push_back(hash.Digest());
    ++r.layers;
    r.bytes += l.bytes;
  }
  const std::string text =
      WriteExportManifest(snap.ns, snap.spec, prefix, snap.manifest, files, hashes);
  AUXSTORE_RETURN_IF_ERROR(CreateFile(dirfd.get(), dir, kExportManifestName, [&](int fd) {
    return WriteAll(fd, reinterpret_cast<const uint8_t*>(text.data()), text.size(),
                    kExportManifestName);
  }));
  if (::fsync(dirfd.get()) != 0) return Errno("fsync " + dir);
  return r;
}

Result<LoadedImport> LoadImportDir(const std::string& dir, uint64_t max_layer_bytes) {
  Fd dirfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dirfd.get() < 0) return Errno("open import directory " + dir);
  AUXSTORE_ASSIGN_OR_RETURN(auto text, ReadBoundedFile(dirfd.get(), kExportManifestName,
                                                       std::nullopt, kMaxExportManifestBytes));
  LoadedImport out;
  AUXSTORE_ASSIGN_OR_RETURN(
      out.plan, ParseImportManifest({reinterpret_cast<const char*>(text.data()), text.size()},
                                    max_layer_bytes));
  for (const ImportLayer& l : out.plan.layers) {
    const std::string where = "layer " + std::to_string(l.layer) + " (" + l.file + ")";
    AUXSTORE_ASSIGN_OR_RETURN(auto blob, ReadBoundedFile(dirfd.get(), l.file, l.bytes, l.bytes));
    const uint64_t hash = BlobHasher::Hash(blob);
    if (hash != l.xxh3) {
      char b[80];
      std::snprintf(b, sizeof b, "XXH3 mismatch: manifest says %016llx, file has %016llx",
                    static_cast<unsigned long long>(l.xxh3), static_cast<unsigned long long>(hash));
      return Status::Corruption(where + ": " + b);
    }
    AUXSTORE_RETURN_IF_ERROR(
        CheckLayerBlob(l.layer, l.kind, blob, blob.size(), out.plan.spec).WithContext(where));
    out.blobs.push_back(std::move(blob));
  }
  return out;
}

Result<ImportReport> ImportSnapshot(const std::string& store_path, const std::string& dir,
                                    uint64_t max_layer_bytes, const std::string& shared) {
  AUXSTORE_ASSIGN_OR_RETURN(LoadedImport in, LoadImportDir(dir, max_layer_bytes));
  Options o;
  o.background_maintenance = false;
  o.shared = shared;
  AUXSTORE_ASSIGN_OR_RETURN(auto store, Store::Open(o, store_path));
  ImportReport r{in.plan.ns, in.plan.prefix, in.plan.layers.size(), 0, false};
  if (store->GetManifest(in.plan.ns, in.plan.prefix).ok()) {
    r.already_present = true;
    return r;
  }
  AUXSTORE_ASSIGN_OR_RETURN(NamespaceId ns, store->RegisterNamespace(in.plan.spec));
  if (ns != in.plan.ns)
    return Status::Internal("registered namespace id differs from the manifest's");
  std::vector<LayerBlob> layers;
  for (size_t i = 0; i < in.plan.layers.size(); ++i) {
    layers.push_back({in.plan.layers[i].layer, in.plan.layers[i].kind, in.blobs[i]});
    r.bytes += in.blobs[i].size();
  }
  PutOptions put;
  put.token_digest = in.plan.token_digest;
  AUXSTORE_RETURN_IF_ERROR(
      store->PutSnapshot(ns, in.plan.prefix, in.plan.token_count, layers, put));
  return r;
}

}  // namespace auxstore::cli

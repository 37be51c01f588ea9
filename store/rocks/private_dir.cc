#include "store/rocks/private_dir.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace auxstore::store_internal {
namespace {

Status ErrnoStatus(const std::string& what) {
  return Status::IOError(what + ": " + std::strerror(errno));
}

}  // namespace

Status MakePrivateDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0) {
    if (errno != EEXIST) return ErrnoStatus("create directory " + path);
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) return ErrnoStatus("stat " + path);
    if (!S_ISDIR(st.st_mode)) return Status::IOError(path + " exists and is not a directory");
  }
  if (::chmod(path.c_str(), 0700) != 0) return ErrnoStatus("chmod 0700 " + path);
  return Status::Ok();
}

}  // namespace auxstore::store_internal

#include "store/rados/rados_status.h"

#include <cerrno>
#include <cstring>
#include <string>

namespace auxstore::rados {

Status FromRados(int rc, std::string_view op, std::string_view pool) {
  if (rc >= 0) return Status::Ok();
  std::string what = "RADOS pool '" + std::string(pool) + "': " + std::string(op) + ": ";
  std::string err = std::strerror(-rc) + std::string(" (") + std::to_string(rc) + ")";
  switch (-rc) {
    case ETIMEDOUT:
      return Status::Unavailable(what + "no answer within the op timeout, " + err +
                                 ": the OSDs or monitors are unreachable");
    case ENOTCONN:
    case ESHUTDOWN:
    case ECONNREFUSED:
      return Status::Unavailable(what + "cluster unreachable, " + err);
    case ENOENT:
      return Status::NotFound(what + "not found");
    case EEXIST:
      return Status::Busy(what + "already exists");
    default:
      return Status::IOError(what + err);
  }
}

}  // namespace auxstore::rados

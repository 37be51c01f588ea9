#include "store/rados/rados_connection.h"

#include <cstring>
#include <string>

#include "store/rados/rados_status.h"

namespace auxstore::rados {

Result<std::unique_ptr<RadosConnection>> RadosConnection::Open(const RadosUri& uri) {
  std::unique_ptr<RadosConnection> c(new RadosConnection(uri));
  const std::string where = "shared tier " + uri.ToString() + ": ";
  const std::string client = "client." + uri.user;
  int rc = c->cluster_.init2(client.c_str(), "ceph", 0);
  if (rc < 0) {
    return Status::InvalidArgument(where + "librados init as " + client + ": " + strerror(-rc));
  }
  rc = c->cluster_.conf_read_file(uri.conf_path.c_str());
  if (rc < 0) {
    return Status::InvalidArgument(where + "cannot read the conf '" + uri.conf_path +
                                   "': " + strerror(-rc));
  }
  // librados's defaults are 0 (wait for ever) for the op timeouts and 300 s
  // for the mount: without these a dead cluster hangs every call.
  const std::string secs = std::to_string(uri.op_timeout_ms / 1000);
  for (const char* key : {"rados_osd_op_timeout", "rados_mon_op_timeout", "client_mount_timeout"}) {
    rc = c->cluster_.conf_set(key, secs.c_str());
    if (rc < 0) return Status::Internal(where + "conf_set " + key + ": " + strerror(-rc));
  }
  // Several clients in one process (or beside the ceph CLI) must not fight
  // over one admin socket file.
  c->cluster_.conf_set("admin_socket", "");
  if (!uri.keyring.empty()) {
    rc = c->cluster_.conf_set("keyring", uri.keyring.c_str());
    if (rc < 0) {
      return Status::InvalidArgument(where + "keyring '" + uri.keyring + "': " + strerror(-rc));
    }
  }
  rc = c->cluster_.connect();
  if (rc < 0) return FromRados(rc, "connect (monitors in " + uri.conf_path + ")", uri.pool);
  c->connected_ = true;
  rc = c->cluster_.ioctx_create(uri.pool.c_str(), c->io_);
  if (rc == -ENOENT) return Status::NotFound(where + "pool '" + uri.pool + "' does not exist");
  if (rc < 0) return FromRados(rc, "open the pool", uri.pool);
  c->io_.set_namespace(uri.ns);
  return c;
}

RadosConnection::~RadosConnection() {
  io_.close();
  if (connected_) cluster_.shutdown();  // returns at once even with the cluster gone
}

Status RadosConnection::Check(int rc, std::string_view op) const {
  return FromRados(rc, op, uri_.pool);
}

}  // namespace auxstore::rados

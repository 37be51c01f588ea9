// RadosConnection: one librados cluster handle and one I/O context on the
// pool and namespace a RadosUri names, with every timeout set so that no call
// made through it blocks longer than the URI's op_timeout_ms (connect
// included).
#pragma once

#include <memory>
#include <rados/librados.hpp>

#include "auxstore/status.h"
#include "store/rados/rados_uri.h"

namespace auxstore::rados {

class RadosConnection {
 public:
  // Connects; InvalidArgument for an unreadable conf or keyring, NotFound
  // for a missing pool, Unavailable when the monitors do not answer within
  // the timeout.
  static Result<std::unique_ptr<RadosConnection>> Open(const RadosUri& uri);

  ~RadosConnection();
  RadosConnection(const RadosConnection&) = delete;
  RadosConnection& operator=(const RadosConnection&) = delete;

  const RadosUri& uri() const { return uri_; }
  // Thread-safe for operations; not for set_namespace (never called after Open).
  librados::IoCtx& io() { return io_; }

  // FromRados with this pool's name.
  Status Check(int rc, std::string_view op) const;

 private:
  explicit RadosConnection(RadosUri uri) : uri_(std::move(uri)) {}

  RadosUri uri_;
  librados::Rados cluster_;
  librados::IoCtx io_;
  bool connected_ = false;
};

}  // namespace auxstore::rados

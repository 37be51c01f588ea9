// librados C++ probe for auxstore's RADOS tier: checks and measures the
// primitives a store needs against a cluster made by ../cluster.sh.
//
// Build (not part of the project's CMake):
//   g++ -std=c++20 -O2 -Wall -o probe probe.cc -lrados -lpthread
// (or `make -C scripts/ceph/probe`)
//
// Usage: probe CONF POOL MODE [args]
//   api                 semantics: exclusive create, atomic compound write,
//                       compare-and-set guards, compound read, aio, listing,
//                       locks, watch/notify; prints errno values seen
//   limits              size/count limits: omap page cap, max write and
//                       object size, xattr and object name length
//   bench [N] [QD]      aio_write_full then aio_read of N 4 MiB objects with
//                       QD in flight (default 64, 16); removes them after
//   load SECONDS        a writer thread and a reader thread, sequential 4 KiB
//                       ops; prints every op slower than 0.5 s and the
//                       longest stall (for kill-osd experiments)
//   connect             time conf_read_file+connect (cluster down or up)
//   hold                connect, then for each line read on stdin run a
//                       timed set of ops (write, read, aio, mon command) and
//                       print the results; ends on EOF
//   put OID TEXT / get OID   write_full / read one small object
// Exit status: 0 when every check of the mode passed.
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <rados/librados.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

using librados::bufferlist;
using Clock = std::chrono::steady_clock;

static double secs_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
static std::string err(int r) {
  if (r >= 0) return std::to_string(r);
  return std::to_string(r) + " (" + std::strerror(-r) + ")";
}
static bufferlist bl_of(const std::string& s) {
  bufferlist b;
  b.append(s);
  return b;
}

static int failures = 0;
static void check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "OK  " : "FAIL", what.c_str());
  if (!ok) ++failures;
}

struct Conn {
  librados::Rados rados;
  librados::IoCtx io;
};

// init + conf_read_file + connect + ioctx_create, timed.
static int connect_to(Conn& c, const char* conf, const char* pool, bool verbose) {
  auto t0 = Clock::now();
  int r = c.rados.init("admin");  // client.admin; auth none needs no key
  if (r < 0) {
    std::printf("init: %s\n", err(r).c_str());
    return r;
  }
  r = c.rados.conf_read_file(conf);
  if (r < 0) {
    std::printf("conf_read_file(%s): %s\n", conf, err(r).c_str());
    return r;
  }
  r = c.rados.connect();
  double tc = secs_since(t0);
  if (verbose || r < 0) std::printf("connect: %s after %.2f s\n", err(r).c_str(), tc);
  if (r < 0) return r;
  r = c.rados.ioctx_create(pool, c.io);
  if (r < 0) {
    std::printf("ioctx_create(%s): %s\n", pool, err(r).c_str());
    return r;
  }
  return 0;
}

// ------------------------------------------------------------------ api
static int mode_api(Conn& c) {
  librados::IoCtx& io = c.io;
  const std::string oid = "probe.api.obj";
  io.remove(oid);  // leftovers of an earlier run

  // 1. exclusive create
  int r = io.create(oid, true);
  check(r == 0, "create(oid, exclusive=true) on a new object -> " + err(r));
  r = io.create(oid, true);
  check(r == -EEXIST, "create(oid, exclusive=true) on an existing object -> " + err(r));
  r = io.create(oid, false);
  check(r == 0, "create(oid, exclusive=false) on an existing object -> " + err(r));
  io.remove(oid);

  // 2. compound write: create(excl) + write_full + omap_set + setxattr
  auto compound = [&](const std::string& data, const std::string& ver) {
    librados::ObjectWriteOperation op;
    op.create(true);
    op.write_full(bl_of(data));
    std::map<std::string, bufferlist> kv{{"k1", bl_of("v1-" + data)}, {"k2", bl_of("v2-" + data)}};
    op.omap_set(kv);
    op.setxattr("ver", bl_of(ver));
    return io.operate(oid, &op);
  };
  r = compound("first", "1");
  uint64_t v_after_create = io.get_last_version();
  check(r == 0, "ObjectWriteOperation{create(true),write_full,omap_set,setxattr} new object -> " +
                    err(r) + ", object version " + std::to_string(v_after_create));
  r = compound("second", "2");
  check(r == -EEXIST, "same compound op on the existing object -> " + err(r));
  {
    bufferlist data, x;
    io.read(oid, data, 0, 0);
    io.getxattr(oid, "ver", x);
    std::map<std::string, bufferlist> vals;
    bool more = false;
    io.omap_get_vals2(oid, "", 100, &vals, &more);
    bool intact = data.to_str() == "first" && x.to_str() == "1" && vals.size() == 2 &&
                  vals["k1"].to_str() == "v1-first";
    check(intact, "failed compound op changed nothing (data='" + data.to_str() + "', xattr ver='" +
                      x.to_str() + "', omap k1='" + vals["k1"].to_str() + "'): all-or-nothing");
  }

  // 3. compare-and-set guards
  {
    librados::ObjectWriteOperation op;  // xattr string compare
    op.cmpxattr("ver", LIBRADOS_CMPXATTR_OP_EQ, bl_of("1"));
    op.write_full(bl_of("cas-ok"));
    op.setxattr("ver", bl_of("2"));
    r = io.operate(oid, &op);
    check(r == 0, "cmpxattr(ver EQ '1') guard true -> write applied, " + err(r));
  }
  {
    librados::ObjectWriteOperation op;
    op.cmpxattr("ver", LIBRADOS_CMPXATTR_OP_EQ, bl_of("1"));  // is "2" now
    op.write_full(bl_of("cas-stale"));
    r = io.operate(oid, &op);
    bufferlist d;
    io.read(oid, d, 0, 0);
    check(r == -ECANCELED && d.to_str() == "cas-ok",
          "cmpxattr(ver EQ '1') guard false (xattr is '2') -> " + err(r) + ", data still '" +
              d.to_str() + "'");
  }
  {
    librados::ObjectWriteOperation op;  // numeric compare: xattr parsed as decimal u64
    op.cmpxattr("ver", LIBRADOS_CMPXATTR_OP_EQ, uint64_t(2));
    r = io.operate(oid, &op);
    // a write op made of guards only returns the guard's value: 1
    check(r == 1,
          "guard-only op {cmpxattr(ver EQ uint64 2)} with xattr '2' -> " + err(r) + " (1, not 0)");
  }
  {
    // direction: the OSD evaluates  <operand> OP <stored xattr>
    librados::ObjectWriteOperation lt, gt;
    lt.cmpxattr("ver", LIBRADOS_CMPXATTR_OP_LT, uint64_t(5));
    int rlt = io.operate(oid, &lt);
    gt.cmpxattr("ver", LIBRADOS_CMPXATTR_OP_GT, uint64_t(5));
    int rgt = io.operate(oid, &gt);
    check(rlt == -ECANCELED && rgt == 1,
          "cmpxattr u64 order is 'operand OP stored': stored '2': LT 5 -> " + err(rlt) +
              ", GT 5 -> " + err(rgt));
    librados::ObjectWriteOperation slt;
    slt.cmpxattr("ver", LIBRADOS_CMPXATTR_OP_GT, bl_of("1"));
    int rs = io.operate(oid, &slt);
    check(rs == -ECANCELED,
          "cmpxattr string GT '1' with stored '2' ('1' > '2' false) -> " + err(rs));
    librados::ObjectWriteOperation bump;
    bump.cmpxattr("ver", LIBRADOS_CMPXATTR_OP_EQ, uint64_t(2));
    bump.setxattr("ver", bl_of("3"));
    r = io.operate(oid, &bump);
    check(r == 0, "numeric CAS: cmpxattr(ver EQ uint64 2) + setxattr(ver '3') -> " + err(r));
  }
  {
    librados::ObjectWriteOperation op;
    op.cmpxattr("nosuchattr", LIBRADOS_CMPXATTR_OP_EQ, bl_of(""));
    op.write_full(bl_of("x"));
    r = io.operate(oid, &op);
    std::printf("INFO cmpxattr on a missing xattr (EQ '') -> %s\n", err(r).c_str());
  }
  {
    librados::ObjectWriteOperation op;
    op.cmpxattr("ver", LIBRADOS_CMPXATTR_OP_EQ, bl_of("3"));
    op.write_full(bl_of("x"));
    r = io.operate("probe.api.missing", &op);
    check(r == -ENOENT, "cmpxattr guard on a missing object -> " + err(r));
  }
  // object version guard
  uint64_t ver = 0;
  {
    librados::ObjectReadOperation rop;
    uint64_t sz = 0;
    time_t mt = 0;
    int sr = 0;
    rop.stat(&sz, &mt, &sr);
    r = io.operate(oid, &rop, nullptr);
    ver = io.get_last_version();
    check(r == 0 && ver > 0,
          "stat read op -> " + err(r) + ", get_last_version()=" + std::to_string(ver));
  }
  {
    librados::ObjectWriteOperation op;
    op.assert_version(ver);
    op.write_full(bl_of("v-guarded"));
    r = io.operate(oid, &op);
    uint64_t nv = io.get_last_version();
    check(r == 0, "assert_version(current " + std::to_string(ver) + ") -> " + err(r) +
                      ", new version " + std::to_string(nv));
  }
  {
    librados::ObjectWriteOperation op;
    op.assert_version(ver);  // stale now
    op.write_full(bl_of("v-stale"));
    r = io.operate(oid, &op);
    check(r == -ERANGE, "assert_version(stale, lower than current) -> " + err(r));
  }
  {
    librados::ObjectWriteOperation op;
    op.assert_version(ver + 1000);
    op.write_full(bl_of("v-future"));
    r = io.operate(oid, &op);
    check(r == -EOVERFLOW, "assert_version(higher than current) -> " + err(r));
  }
  {
    librados::ObjectWriteOperation op;  // omap compare
    std::map<std::string, std::pair<bufferlist, int>> a{
        {"k1", {bl_of("v1-first"), LIBRADOS_CMPXATTR_OP_EQ}}};
    int prval = 0;
    op.omap_cmp(a, &prval);
    op.omap_set({{"k3", bl_of("v3")}});
    r = io.operate(oid, &op);
    check(r == 0, "omap_cmp(k1 EQ 'v1-first') guard true -> " + err(r));
  }
  {
    librados::ObjectWriteOperation op;
    std::map<std::string, std::pair<bufferlist, int>> a{
        {"k1", {bl_of("zzz"), LIBRADOS_CMPXATTR_OP_EQ}}};
    int prval = 0;
    op.omap_cmp(a, &prval);
    op.omap_set({{"k4", bl_of("v4")}});
    r = io.operate(oid, &op);
    check(r == -ECANCELED,
          "omap_cmp(k1 EQ 'zzz') guard false -> " + err(r) + ", prval " + err(prval));
  }
  {
    librados::ObjectWriteOperation op;
    std::map<std::string, std::pair<bufferlist, int>> a{
        {"absent", {bl_of(""), LIBRADOS_CMPXATTR_OP_EQ}}};
    int prval = 0;
    op.omap_cmp(a, &prval);
    op.omap_set({{"k5", bl_of("v5")}});
    r = io.operate(oid, &op);
    std::printf("INFO omap_cmp on an absent key (EQ '') -> %s, prval %s\n", err(r).c_str(),
                err(prval).c_str());
  }
  {
    // direction for omap_cmp: <stored value> OP <operand>  (opposite of cmpxattr)
    librados::ObjectWriteOperation op;
    std::map<std::string, std::pair<bufferlist, int>> a{
        {"k1", {bl_of("zzz"), LIBRADOS_CMPXATTR_OP_LT}}};
    int prval = 0;
    op.omap_cmp(a, &prval);
    int rlt = io.operate(oid, &op);
    librados::ObjectWriteOperation op2;
    std::map<std::string, std::pair<bufferlist, int>> a2{
        {"k1", {bl_of("zzz"), LIBRADOS_CMPXATTR_OP_GT}}};
    op2.omap_cmp(a2, &prval);
    int rgt = io.operate(oid, &op2);
    std::printf("INFO omap_cmp stored 'v1-first' vs operand 'zzz': LT -> %s, GT -> %s\n",
                err(rlt).c_str(), err(rgt).c_str());
  }
  {
    librados::ObjectWriteOperation op;  // data compare
    int prval = 0;
    op.cmpext(0, bl_of("XXXX"), &prval);
    op.write_full(bl_of("cmpext"));
    r = io.operate(oid, &op);
    std::printf(
        "INFO cmpext(0,'XXXX') mismatch on 'v-guarded' -> %s, prval %d (-MAX_ERRNO(4095) - offset "
        "of first mismatch)\n",
        err(r).c_str(), prval);
    check(r < 0, "cmpext mismatch fails the op");
  }
  {
    librados::ObjectWriteOperation op;
    op.assert_exists();
    op.write_full(bl_of("x"));
    r = io.operate("probe.api.missing", &op);
    check(r == -ENOENT, "assert_exists on a missing object -> " + err(r));
  }

  // 4. compound read: read + omap_get_vals2 + getxattrs
  {
    librados::ObjectReadOperation rop;
    bufferlist data;
    int rr = 0, ro = 0, rx = 0;
    std::map<std::string, bufferlist> vals, xattrs;
    bool more = true;
    rop.read(0, 0, &data, &rr);  // len 0 = whole object
    rop.omap_get_vals2("", 2, &vals, &more, &ro);
    rop.getxattrs(&xattrs, &rx);
    r = io.operate(oid, &rop, nullptr);
    std::string keys;
    for (auto& [k, v] : vals) keys += k + " ";
    check(r == 0 && rr == 0 && ro == 0 && data.to_str() == "v-guarded" && vals.size() == 2 && more,
          "ObjectReadOperation{read(0,0),omap_get_vals2(\"\",max 2),getxattrs} -> " + err(r) +
              ", data '" + data.to_str() + "', omap keys [" + keys +
              "] more=" + (more ? "true" : "false") + ", xattrs " + std::to_string(xattrs.size()));
    std::map<std::string, bufferlist> rest;
    bool more2 = true;
    librados::ObjectReadOperation rop2;
    rop2.omap_get_vals2(vals.rbegin()->first, 100, &rest, &more2, &ro);
    io.operate(oid, &rop2, nullptr);
    // k1 k2 k3 k5 exist (k5 came from the absent-key omap_cmp above)
    check(rest.size() == 2 && !more2, "omap_get_vals2(start_after last key) -> " +
                                          std::to_string(rest.size()) +
                                          " more key(s), more=" + (more2 ? "true" : "false"));
  }
  {
    librados::ObjectReadOperation rop;
    bufferlist data;
    int rr = 0;
    rop.read(0, 0, &data, &rr);
    r = io.operate("probe.api.missing", &rop, nullptr);
    check(r == -ENOENT, "read op on a missing object -> " + err(r));
    bufferlist b;
    r = io.read("probe.api.missing", b, 0, 0);
    check(r == -ENOENT, "IoCtx::read of a missing object -> " + err(r));
    std::map<std::string, bufferlist> vals;
    bool more;
    r = io.omap_get_vals2("probe.api.missing", "", 10, &vals, &more);
    check(r == -ENOENT, "omap_get_vals2 of a missing object -> " + err(r));
  }
  {
    // a failing sub-op normally fails the whole read; OP_FAILOK lets it go
    librados::ObjectReadOperation rop;
    bufferlist x, data;
    int rx = 0, rr = 0;
    rop.getxattr("nosuchattr", &x, &rx);
    rop.set_op_flags2(librados::OP_FAILOK);
    rop.read(0, 0, &data, &rr);
    r = io.operate(oid, &rop, nullptr);
    std::printf(
        "INFO read op {getxattr(missing) with OP_FAILOK, read} -> %s, getxattr prval %s, read "
        "'%s'\n",
        err(r).c_str(), err(rx).c_str(), data.to_str().c_str());
    librados::ObjectReadOperation rop2;
    bufferlist x2, d2;
    rop2.getxattr("nosuchattr", &x2, &rx);
    rop2.read(0, 0, &d2, &rr);
    r = io.operate(oid, &rop2, nullptr);
    std::printf("INFO read op {getxattr(missing), read} without FAILOK -> %s\n", err(r).c_str());
  }
  {
    bufferlist digits = bl_of("0123456789");
    int r1 = io.write_full(oid, digits);
    bufferlist b;
    int r2 = io.read(oid, b, 4, 3);
    check(r1 == 0 && r2 == 4 && b.to_str() == "3456",
          "IoCtx::read(oid, bl, len 4, off 3) returns bytes read: " + err(r2) + " '" + b.to_str() +
              "'");
    uint64_t sz;
    time_t mt;
    r = io.stat(oid, &sz, &mt);
    check(r == 0 && sz == 10, "IoCtx::stat size " + std::to_string(sz));
    bufferlist b2;
    r = io.read(oid, b2, 100, 50);
    check(r == 0, "read past the end -> " + err(r) + " (0 bytes, not an error)");
  }

  // 5. aio, several in flight
  {
    const int n = 32;
    std::vector<librados::AioCompletion*> cs;
    std::vector<bufferlist> bls(n);
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      auto* comp = librados::Rados::aio_create_completion();
      bufferlist b = bl_of("aio-" + std::to_string(i));
      int rq = io.aio_write_full("probe.aio." + std::to_string(i), comp, b);
      if (rq < 0) std::printf("aio_write_full submit: %s\n", err(rq).c_str());
      cs.push_back(comp);
    }
    int bad = 0;
    for (auto* comp : cs) {
      comp->wait_for_complete();
      if (comp->get_return_value() != 0) ++bad;
      comp->release();
    }
    cs.clear();
    double tw = secs_since(t0);
    t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      auto* comp = librados::Rados::aio_create_completion();
      io.aio_read("probe.aio." + std::to_string(i), comp, &bls[i], 1 << 20, 0);
      cs.push_back(comp);
    }
    int badr = 0;
    for (int i = 0; i < n; ++i) {
      cs[i]->wait_for_complete();
      int rv = cs[i]->get_return_value();  // bytes read
      if (rv != (int)bls[i].length() || bls[i].to_str() != "aio-" + std::to_string(i)) ++badr;
      cs[i]->release();
    }
    double tr = secs_since(t0);
    check(bad == 0 && badr == 0, std::to_string(n) +
                                     " aio_write_full in flight at once: " + std::to_string(bad) +
                                     " failed, " + std::to_string(tw * 1000 / n).substr(0, 5) +
                                     " ms/op amortised; aio_read: " + std::to_string(badr) +
                                     " bad, " + std::to_string(tr * 1000 / n).substr(0, 5) +
                                     " ms/op; get_return_value() of aio_read = bytes read");
    auto* comp = librados::Rados::aio_create_completion();
    bufferlist b;
    io.aio_read("probe.api.missing", comp, &b, 10, 0);
    comp->wait_for_complete();
    check(comp->get_return_value() == -ENOENT,
          "aio_read of a missing object -> " + err(comp->get_return_value()));
    comp->release();
    // aio compound write with a failing guard
    librados::ObjectWriteOperation op;
    op.create(true);
    op.write_full(bl_of("dup"));
    comp = librados::Rados::aio_create_completion();
    io.aio_operate("probe.aio.0", comp, &op);
    comp->wait_for_complete();
    check(comp->get_return_value() == -EEXIST,
          "aio_operate{create(true),write_full} on an existing object -> " +
              err(comp->get_return_value()));
    comp->release();
  }

  // 6. listing: whole pool and one object's omap
  {
    std::set<std::string> seen;
    size_t total = 0;
    auto t0 = Clock::now();
    for (auto it = io.nobjects_begin(); it != io.nobjects_end(); ++it) {
      ++total;
      if (it->get_oid().rfind("probe.aio.", 0) == 0) seen.insert(it->get_oid());
    }
    check(seen.size() == 32, "nobjects_begin()..nobjects_end(): " + std::to_string(total) +
                                 " objects in pool, " + std::to_string(seen.size()) +
                                 "/32 probe.aio.* found, " +
                                 std::to_string(secs_since(t0) * 1000).substr(0, 5) +
                                 " ms (order is by hash, not by name)");
    std::map<std::string, bufferlist> vals;
    std::string after;
    bool more = true;
    int pages = 0;
    size_t keys = 0;
    while (more) {
      vals.clear();
      r = io.omap_get_vals2(oid, after, 2, &vals, &more);
      if (r < 0 || vals.empty()) break;
      ++pages;
      keys += vals.size();
      after = vals.rbegin()->first;
    }
    check(keys == 4, "paged omap listing of one object, max 2 per call: " + std::to_string(keys) +
                         " keys in " + std::to_string(pages) + " pages");
    for (int i = 0; i < 32; ++i) io.remove("probe.aio." + std::to_string(i));
  }

  // 7. advisory lock (leases) and watch/notify (invalidation)
  {
    struct timeval dur = {30, 0};
    r = io.lock_exclusive(oid, "lease", "cookie-A", "probe", &dur, 0);
    check(r == 0, "lock_exclusive(cookie-A, 30 s) -> " + err(r));
    r = io.lock_exclusive(oid, "lease", "cookie-B", "probe", &dur, 0);
    check(r == -EBUSY, "lock_exclusive(cookie-B) while A holds it -> " + err(r));
    r = io.lock_exclusive(oid, "lease", "cookie-A", "probe", &dur, 0);
    check(r == -EEXIST, "lock_exclusive(cookie-A) again without RENEW -> " + err(r));
    r = io.lock_exclusive(oid, "lease", "cookie-A", "probe", &dur, LIBRADOS_LOCK_FLAG_MAY_RENEW);
    check(r == 0, "lock_exclusive(cookie-A, LIBRADOS_LOCK_FLAG_MAY_RENEW) -> " + err(r));
    r = io.unlock(oid, "lease", "cookie-A");
    check(r == 0, "unlock -> " + err(r));
    r = io.unlock(oid, "lease", "cookie-A");
    check(r == -ENOENT, "unlock again -> " + err(r));
  }
  {
    struct W : librados::WatchCtx2 {
      librados::IoCtx* io;
      std::string oid;
      std::atomic<int> got{0};
      void handle_notify(uint64_t notify_id, uint64_t cookie, uint64_t, bufferlist& bl) override {
        ++got;
        bufferlist reply = bl_of("ack:" + bl.to_str());
        io->notify_ack(oid, notify_id, cookie, reply);
      }
      void handle_error(uint64_t, int e) override { std::printf("watch error %d\n", e); }
    } w;
    w.io = &io;
    w.oid = oid;
    uint64_t handle = 0;
    r = io.watch2(oid, &handle, &w);
    bufferlist reply;
    auto t0 = Clock::now();
    bufferlist hello = bl_of("hello");
    int rn = io.notify2(oid, hello, 5000, &reply);
    double tn = secs_since(t0);
    check(r == 0 && rn == 0 && w.got == 1,
          "watch2 + notify2 (5 s timeout): watch " + err(r) + ", notify " + err(rn) + ", " +
              std::to_string(w.got.load()) + " notification(s), round trip " +
              std::to_string(tn * 1000).substr(0, 5) + " ms");
    io.unwatch2(handle);
  }

  // 8. mon command through librados (pool stats)
  {
    bufferlist out;
    std::string outs;
    r = c.rados.mon_command(R"({"prefix": "osd pool ls", "format": "json"})", {}, &out, &outs);
    check(r == 0, "Rados::mon_command(osd pool ls) -> " + err(r) + " " + out.to_str());
  }
  io.remove(oid);
  std::printf("api: %d failure(s)\n", failures);
  return failures ? 1 : 0;
}

// ---------------------------------------------------------------- bench
static int mode_bench(Conn& c, int n, int qd) {
  librados::IoCtx& io = c.io;
  const size_t sz = 4u << 20;
  std::string payload(sz, '\0');
  for (size_t i = 0; i < sz; ++i) payload[i] = char(i * 131 + 7);
  bufferlist src;
  src.append(payload);

  struct Slot {
    librados::AioCompletion* c = nullptr;
    bufferlist bl;
    int idx = -1;
    Clock::time_point t0;
  };
  auto run = [&](bool write, double* max_lat) {
    std::vector<Slot> slots(qd);
    int next = 0, done = 0, bad = 0;
    *max_lat = 0;
    auto t0 = Clock::now();
    auto submit = [&](Slot& s) {
      s.idx = next++;
      s.c = librados::Rados::aio_create_completion();
      s.t0 = Clock::now();
      std::string oid = "probe.bench." + std::to_string(s.idx);
      if (write) {
        io.aio_write_full(oid, s.c, src);
      } else {
        s.bl.clear();
        io.aio_read(oid, s.c, &s.bl, sz, 0);
      }
    };
    for (auto& s : slots)
      if (next < n) submit(s);
    // simple: wait for slots in order (all ops are the same size)
    while (done < n) {
      for (auto& s : slots) {
        if (!s.c) continue;
        s.c->wait_for_complete();
        int rv = s.c->get_return_value();
        *max_lat = std::max(*max_lat, secs_since(s.t0));
        if (write ? rv != 0 : rv != (int)sz) ++bad;
        if (!write && s.idx == 0 && s.bl.to_str() != payload) ++bad;
        s.c->release();
        s.c = nullptr;
        ++done;
        if (next < n) submit(s);
      }
    }
    double t = secs_since(t0);
    std::printf(
        "RESULT aio %-5s %d x 4 MiB, %d in flight: %.2f s, %.0f MB/s (%.0f MiB/s), max latency "
        "%.0f ms, %d bad\n",
        write ? "write" : "read", n, qd, t, n * 4.194304 / t, n * 4.0 / t, *max_lat * 1000, bad);
    return bad;
  };
  double ml;
  int bad = run(true, &ml);
  bad += run(false, &ml);
  for (int i = 0; i < n; ++i) io.remove("probe.bench." + std::to_string(i));
  return bad ? 1 : 0;
}

// ----------------------------------------------------------------- load
static int mode_load(Conn& c, double seconds) {
  librados::IoCtx& io = c.io;
  const int nobj = 64;
  bufferlist small = bl_of(std::string(4096, 'r'));
  for (int i = 0; i < nobj; ++i) io.write_full("probe.load.r." + std::to_string(i), small);
  std::mutex mu;
  auto start = Clock::now();
  auto worker = [&](bool write) {
    const char* name = write ? "write" : "read";
    long ops = 0, errs = 0, slow = 0;
    double max_lat = 0, max_at = 0, stalled = 0;
    bufferlist data = bl_of(std::string(4096, 'w'));
    for (int i = 0; secs_since(start) < seconds; ++i) {
      auto t0 = Clock::now();
      int r;
      if (write) {
        r = io.write_full("probe.load.w." + std::to_string(i % nobj), data);
      } else {
        bufferlist b;
        r = io.read("probe.load.r." + std::to_string(i % nobj), b, 4096, 0);
        if (r == 4096) r = 0;
      }
      double lat = secs_since(t0);
      ++ops;
      if (r < 0) ++errs;
      if (lat > max_lat) {
        max_lat = lat;
        max_at = secs_since(start) - lat;
      }
      if (lat > 0.5 || r < 0) {
        ++slow;
        stalled += lat;
        std::lock_guard<std::mutex> g(mu);
        std::printf("  t=%6.2f s %s obj %d took %.2f s -> %s\n", secs_since(start) - lat, name,
                    i % nobj, lat, err(r).c_str());
        std::fflush(stdout);
      }
    }
    std::lock_guard<std::mutex> g(mu);
    std::printf(
        "RESULT load %-5s: %ld ops in %.0f s, %ld errors, %ld ops > 0.5 s (%.1f s in them), "
        "longest %.2f s at t=%.2f s\n",
        name, ops, seconds, errs, slow, stalled, max_lat, max_at);
  };
  std::printf(
      "load: start (t=0) at epoch %.3f, %.0f s\n",
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(),
      seconds);
  std::fflush(stdout);
  std::thread w(worker, true), r(worker, false);
  w.join();
  r.join();
  return 0;
}

// --------------------------------------------------------------- limits
static int mode_limits(Conn& c, const char* conf) {
  librados::IoCtx& io = c.io;
  const std::string oid = "probe.limits";
  io.remove(oid);
  int r;
  {
    std::map<std::string, bufferlist> kv;
    for (int i = 0; i < 1500; ++i) kv[std::to_string(100000 + i)] = bl_of("v");
    librados::ObjectWriteOperation op;
    op.omap_set(kv);
    r = io.operate(oid, &op);
    check(r == 0, "omap_set of 1500 keys in one op -> " + err(r));
    std::map<std::string, bufferlist> out;
    bool more = false;
    r = io.omap_get_vals2(oid, "", 5000, &out, &more);
    check(r == 0 && out.size() == 1024 && more,
          "omap_get_vals2(max_return 5000) -> " + std::to_string(out.size()) + " keys, more=" +
              (more ? "true" : "false") + " (capped by osd_max_omap_entries_per_request=1024)");
  }
  {
    bufferlist big;
    big.append(std::string(100u << 20, 'b'));
    r = io.write_full(oid + ".big", big);
    check(r < 0, "write_full of 100 MiB in one op (osd_max_write_size 90 MB) -> " + err(r));
    bufferlist two;
    two.append(std::string(2u << 20, 't'));
    r = io.write(oid + ".big", two, two.length(), (127u << 20));
    check(r < 0, "write ending past 128 MiB (osd_max_object_size) -> " + err(r));
    bufferlist ok;
    ok.append(std::string(64u << 20, 'o'));
    r = io.write_full(oid + ".big", ok);
    check(r == 0, "write_full of 64 MiB in one op -> " + err(r));
    io.remove(oid + ".big");
  }
  {
    bufferlist v;
    v.append(std::string(1u << 20, 'x'));
    r = io.setxattr(oid, "bigattr", v);
    std::printf("INFO setxattr with a 1 MiB value -> %s\n", err(r).c_str());
    bufferlist sv = bl_of("v");
    r = io.setxattr(oid, std::string(101, 'n').c_str(), sv);
    check(r < 0, "setxattr with a 101-char name (osd_max_attr_name_len 100) -> " + err(r));
    bufferlist b = bl_of("x");
    r = io.write_full(std::string(2049, 'o'), b);
    check(r < 0,
          "write_full to a 2049-char object name (osd_max_object_name_len 2048) -> " + err(r));
  }
  io.remove(oid);
  {
    librados::IoCtx other;
    r = c.rados.ioctx_create("no-such-pool", other);
    check(r == -ENOENT, "ioctx_create of a missing pool -> " + err(r));
  }
  (void)conf;
  std::printf("limits: %d failure(s)\n", failures);
  return failures ? 1 : 0;
}

// ----------------------------------------------------------------- hold
static void timed_ops(Conn& c, const std::string& label) {
  librados::IoCtx& io = c.io;
  auto t0 = Clock::now();
  bufferlist hb = bl_of("hold " + label);
  int r = io.write_full("probe.hold", hb);
  std::printf("RESULT [%s] write_full: %s after %.2f s\n", label.c_str(), err(r).c_str(),
              secs_since(t0));
  std::fflush(stdout);
  t0 = Clock::now();
  bufferlist b;
  r = io.read("probe.hold", b, 100, 0);
  std::printf("RESULT [%s] read: %s after %.2f s\n", label.c_str(), err(r).c_str(), secs_since(t0));
  std::fflush(stdout);
  t0 = Clock::now();
  auto* comp = librados::Rados::aio_create_completion();
  bufferlist ab = bl_of("aio hold");
  r = io.aio_write_full("probe.hold.aio", comp, ab);
  comp->wait_for_complete();
  std::printf("RESULT [%s] aio_write_full: submit %s, completion %s after %.2f s\n", label.c_str(),
              err(r).c_str(), err(comp->get_return_value()).c_str(), secs_since(t0));
  comp->release();
  std::fflush(stdout);
  t0 = Clock::now();
  bufferlist out;
  std::string outs;
  r = c.rados.mon_command(R"({"prefix": "osd stat", "format": "json"})", {}, &out, &outs);
  std::printf("RESULT [%s] mon_command(osd stat): %s after %.2f s %s\n", label.c_str(),
              err(r).c_str(), secs_since(t0), r == 0 ? out.to_str().c_str() : outs.c_str());
  std::fflush(stdout);
}

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: probe CONF POOL api|limits|bench [N] [QD]|load SECONDS|connect|hold|put "
                 "OID TEXT|get OID\n");
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const char* conf = argv[1];
  const char* pool = argv[2];
  std::string mode = argv[3];
  Conn c;
  bool verbose = mode == "connect" || mode == "hold";
  int r = connect_to(c, conf, pool, verbose);
  if (mode == "connect") {
    if (r == 0) c.rados.shutdown();
    return r == 0 ? 0 : 1;
  }
  if (r < 0) return 1;
  int rc = 0;
  if (mode == "api") {
    rc = mode_api(c);
  } else if (mode == "limits") {
    rc = mode_limits(c, conf);
  } else if (mode == "bench") {
    rc = mode_bench(c, argc > 4 ? std::atoi(argv[4]) : 64, argc > 5 ? std::atoi(argv[5]) : 16);
  } else if (mode == "load") {
    rc = mode_load(c, argc > 4 ? std::atof(argv[4]) : 20);
  } else if (mode == "hold") {
    timed_ops(c, "healthy");
    std::printf("READY\n");
    std::fflush(stdout);
    std::string line;
    while (std::getline(std::cin, line)) timed_ops(c, line);
  } else if (mode == "put" && argc > 5) {
    bufferlist b = bl_of(argv[5]);
    r = c.io.write_full(argv[4], b);
    std::printf("put %s: %s\n", argv[4], err(r).c_str());
    rc = r < 0;
  } else if (mode == "get" && argc > 4) {
    bufferlist b;
    r = c.io.read(argv[4], b, 0, 0);
    std::printf("get %s: %s '%s'\n", argv[4], err(r).c_str(), b.to_str().c_str());
    rc = r < 0;
  } else {
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    rc = 2;
  }
  auto t0 = Clock::now();
  c.io.close();
  c.rados.shutdown();
  if (mode == "hold") std::printf("shutdown took %.2f s\n", secs_since(t0));
  return rc;
}

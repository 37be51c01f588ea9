#include "store/rados/rados_uri.h"

#include <charconv>
#include <set>

namespace auxstore::rados {
namespace {

constexpr std::string_view kScheme = "rados://";

Status Bad(std::string_view uri, const std::string& what) {
  return Status::InvalidArgument("shared tier URI '" + std::string(uri) + "': " + what);
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decodes `in`; false on a malformed escape.
bool Decode(std::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;  // '%' needs two hex digits after it
    int hi = HexValue(in[i + 1]), lo = HexValue(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

std::string Encode(std::string_view in) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : in) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_' || c == '.' || c == '~' || c == '/';
    if (plain) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

Status ParseTimeout(std::string_view uri, const std::string& value, uint32_t* out) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size()) {
    return Bad(uri, "op_timeout_ms='" + value + "' is not a whole number of milliseconds");
  }
  if (v < 1000 || v > kMaxOpTimeoutMs || v % 1000 != 0) {
    return Bad(uri, "op_timeout_ms=" + value +
                        " must be a multiple of 1000 between 1000 and 3600000 (librados takes "
                        "its timeouts in whole seconds)");
  }
  *out = static_cast<uint32_t>(v);
  return Status::Ok();
}

// Applies one decoded key=value to `cfg`.
Status ApplyParameter(std::string_view uri, const std::string& key, const std::string& value,
                      RadosUri* cfg) {
  if (value.empty()) return Bad(uri, "parameter '" + key + "' has an empty value");
  if (key == "conf") {
    cfg->conf_path = value;
  } else if (key == "namespace") {
    cfg->ns = value;
  } else if (key == "user") {
    if (value.starts_with("client.")) {
      return Bad(uri, "user='" + value + "': give the id without 'client.'");
    }
    cfg->user = value;
  } else if (key == "keyring") {
    cfg->keyring = value;
  } else if (key == "op_timeout_ms") {
    return ParseTimeout(uri, value, &cfg->op_timeout_ms);
  } else {
    return Bad(uri, "unknown parameter '" + key +
                        "' (known: conf, namespace, user, keyring, op_timeout_ms)");
  }
  return Status::Ok();
}

}  // namespace

Result<RadosUri> ParseRadosUri(std::string_view uri) {
  if (!uri.starts_with(kScheme)) return Bad(uri, "must start with 'rados://'");
  std::string_view rest = uri.substr(kScheme.size());
  size_t q = rest.find('?');
  std::string_view pool_part = rest.substr(0, q);
  std::string_view query = q == std::string_view::npos ? std::string_view() : rest.substr(q + 1);

  RadosUri cfg;
  if (pool_part.empty()) return Bad(uri, "no pool after 'rados://'");
  if (!Decode(pool_part, &cfg.pool)) return Bad(uri, "bad %-escape in the pool name");
  if (cfg.pool.find('/') != std::string::npos) {
    return Bad(uri, "pool name '" + cfg.pool + "' contains '/' (a path is not a pool)");
  }

  std::set<std::string> seen;
  bool more = q != std::string_view::npos;  // a '?' or '&' promises one more parameter
  while (more) {
    size_t amp = query.find('&');
    std::string_view item = query.substr(0, amp);
    more = amp != std::string_view::npos;
    query = more ? query.substr(amp + 1) : std::string_view();
    if (item.empty()) return Bad(uri, "empty parameter (stray '&' or '?')");
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Bad(uri, "parameter '" + std::string(item) + "' has no '=value'");
    }
    std::string key, value;
    if (!Decode(item.substr(0, eq), &key) || !Decode(item.substr(eq + 1), &value)) {
      return Bad(uri, "bad %-escape in '" + std::string(item) + "'");
    }
    if (!seen.insert(key).second) return Bad(uri, "parameter '" + key + "' given twice");
    AUXSTORE_RETURN_IF_ERROR(ApplyParameter(uri, key, value, &cfg));
  }
  if (cfg.conf_path.empty()) {
    return Bad(uri, "no 'conf=PATH' (the ceph.conf naming the monitors) is given");
  }
  return cfg;
}

std::string RadosUri::ToString() const {
  std::string s = "rados://" + Encode(pool) + "?conf=" + Encode(conf_path);
  if (!ns.empty()) s += "&namespace=" + Encode(ns);
  s += "&user=" + Encode(user);
  if (!keyring.empty()) s += "&keyring=" + Encode(keyring);
  s += "&op_timeout_ms=" + std::to_string(op_timeout_ms);
  return s;
}

}  // namespace auxstore::rados

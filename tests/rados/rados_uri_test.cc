// The rados:// URI: every part parsed, every bad part refused with a message
// naming it. No cluster needed.
#include "store/rados/rados_uri.h"

#include <gtest/gtest.h>

#include <ostream>

namespace auxstore::rados {
namespace {

TEST(RadosUri, AllParametersAreParsed) {
  auto uri = ParseRadosUri(
      "rados://kv?conf=/etc/ceph/ceph.conf&namespace=tenant-1&user=engine&keyring=/k/ring"
      "&op_timeout_ms=3000");
  ASSERT_TRUE(uri.ok()) << uri.status().ToString();
  EXPECT_EQ(uri->pool, "kv");
  EXPECT_EQ(uri->conf_path, "/etc/ceph/ceph.conf");
  EXPECT_EQ(uri->ns, "tenant-1");
  EXPECT_EQ(uri->user, "engine");
  EXPECT_EQ(uri->keyring, "/k/ring");
  EXPECT_EQ(uri->op_timeout_ms, 3000u);
}

TEST(RadosUri, DefaultsWhenOnlyPoolAndConfAreGiven) {
  auto uri = ParseRadosUri("rados://auxstore?conf=/c.conf");
  ASSERT_TRUE(uri.ok()) << uri.status().ToString();
  EXPECT_EQ(uri->ns, "");
  EXPECT_EQ(uri->user, "admin");
  EXPECT_EQ(uri->keyring, "");
  EXPECT_EQ(uri->op_timeout_ms, 10000u);
}

TEST(RadosUri, PercentEscapesAreDecodedAndToStringRoundTrips) {
  auto uri = ParseRadosUri("rados://p%2Dx?conf=/a%20b/c.conf&namespace=a%26b%3Dc");
  ASSERT_TRUE(uri.ok()) << uri.status().ToString();
  EXPECT_EQ(uri->pool, "p-x");
  EXPECT_EQ(uri->conf_path, "/a b/c.conf");
  EXPECT_EQ(uri->ns, "a&b=c");
  auto again = ParseRadosUri(uri->ToString());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->pool, uri->pool);
  EXPECT_EQ(again->conf_path, uri->conf_path);
  EXPECT_EQ(again->ns, uri->ns);
  EXPECT_EQ(again->op_timeout_ms, uri->op_timeout_ms);
}

struct BadUri {
  const char* uri;
  const char* names;  // the message must contain this
};
// Test names show the URI, not the struct's pointer bytes.
void PrintTo(const BadUri& b, std::ostream* os) { *os << '"' << b.uri << '"'; }

class RadosUriRefuses : public testing::TestWithParam<BadUri> {};

TEST_P(RadosUriRefuses, WithAMessageNamingTheBadPart) {
  auto uri = ParseRadosUri(GetParam().uri);
  ASSERT_FALSE(uri.ok()) << GetParam().uri;
  EXPECT_EQ(uri.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(uri.status().message().find(GetParam().names), std::string::npos)
      << uri.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    EveryBadPart, RadosUriRefuses,
    testing::Values(BadUri{"", "rados://"}, BadUri{"ceph://p?conf=/c", "rados://"},
                    BadUri{"rados://?conf=/c", "no pool"},
                    BadUri{"rados://a/b?conf=/c", "contains '/'"}, BadUri{"rados://p", "conf=PATH"},
                    BadUri{"rados://p?", "empty parameter"},
                    BadUri{"rados://p?conf=/c&", "empty parameter"},
                    BadUri{"rados://p?conf=/c&&user=u", "empty parameter"},
                    BadUri{"rados://p?conf", "'conf' has no '=value'"},
                    BadUri{"rados://p?conf=", "'conf' has an empty value"},
                    BadUri{"rados://p?conf=/c&colour=red", "unknown parameter 'colour'"},
                    BadUri{"rados://p?conf=/c&conf=/d", "'conf' given twice"},
                    BadUri{"rados://p?conf=/c%2", "bad %-escape"},
                    BadUri{"rados://p%zz?conf=/c", "bad %-escape in the pool"},
                    BadUri{"rados://p?conf=/c&user=client.admin", "without 'client.'"},
                    BadUri{"rados://p?conf=/c&op_timeout_ms=fast", "not a whole number"},
                    BadUri{"rados://p?conf=/c&op_timeout_ms=-1000", "not a whole number"},
                    BadUri{"rados://p?conf=/c&op_timeout_ms=2500", "multiple of 1000"},
                    BadUri{"rados://p?conf=/c&op_timeout_ms=0", "multiple of 1000"},
                    BadUri{"rados://p?conf=/c&op_timeout_ms=3601000", "multiple of 1000"},
                    BadUri{"rados://p?conf=/c&op_timeout_ms=99999999999999999999",
                           "not a whole number"}));

}  // namespace
}  // namespace auxstore::rados

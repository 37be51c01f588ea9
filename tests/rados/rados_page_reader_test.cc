// ReadPagesInto against the ctest fixture's cluster: pages land exact in the
// caller's buffers; a page overwritten behind our back, one of another size
// than the reader expects, and a missing one each get their own error, and
// the others are unaffected.
#include "store/rados/rados_page_reader.h"

#include <string>
#include <vector>

#include "store/rados/rados_page_store.h"
#include "tests/rados/rados_test_env.h"

namespace auxstore::rados {
namespace {

using testenv::PageBytes;

TEST(RadosPageReader, ReadsIntoTheCallersBuffersAndRefusesWhatIsNotThePage) {
  const std::string ns = testenv::UniqueNamespace();
  auto conn = testenv::Connect(testenv::UriFor(ns));
  ASSERT_TRUE(conn);
  std::vector<std::vector<uint8_t>> pages;
  for (size_t i = 0; i < 40; ++i) pages.push_back(PageBytes(800, i, 1000 + 4096 * i));
  std::vector<ByteSpan> spans(pages.begin(), pages.end());
  auto put = RadosPageStore(*conn).PutPages(spans);
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  std::vector<PageKey> keys = put->keys;

  // Page 5 overwritten with other bytes of the same size; page 9 removed;
  // page 12 read with a buffer one byte short, page 13 one byte long.
  std::vector<uint8_t> other = PageBytes(801, 5, pages[5].size());
  librados::bufferlist bl;
  bl.append(reinterpret_cast<const char*>(other.data()), other.size());
  ASSERT_EQ(conn->io().write_full(keys[5].ObjectName(), bl), 0);
  ASSERT_EQ(conn->io().remove(keys[9].ObjectName()), 0);

  std::vector<std::vector<uint8_t>> buffers;
  for (size_t i = 0; i < pages.size(); ++i) {
    size_t size = pages[i].size() + (i == 12 ? -1 : i == 13 ? 1 : 0);
    buffers.emplace_back(size, 0xEE);
  }
  std::vector<std::span<uint8_t>> dst(buffers.begin(), buffers.end());
  auto got = ReadPagesInto(*conn, keys, dst, 8);
  ASSERT_EQ(got.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i == 5 || i == 12 || i == 13) {
      EXPECT_EQ(got[i].code(), StatusCode::kCorruption) << i << ": " << got[i].ToString();
      EXPECT_NE(got[i].message().find(keys[i].ObjectName()), std::string::npos);
    } else if (i == 9) {
      EXPECT_EQ(got[i].code(), StatusCode::kNotFound) << got[i].ToString();
    } else {
      ASSERT_TRUE(got[i].ok()) << i << ": " << got[i].ToString();
      EXPECT_EQ(buffers[i], pages[i]) << "page " << i;
    }
  }

  std::vector<std::span<uint8_t>> too_few(dst.begin(), dst.begin() + 3);
  for (const Status& st : ReadPagesInto(*conn, keys, too_few)) {
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace auxstore::rados

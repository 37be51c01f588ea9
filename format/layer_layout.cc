#include "format/layer_layout.h"

#include <algorithm>
#include <boost/container/small_vector.hpp>
#include <string>

#include "format/byte_order.h"
#include "format/xxh3.h"

namespace auxstore {

using internal::AddOverflows;
using internal::MulOverflows;

namespace {

Status Bad(const LayerEntry& l, const std::string& why) {
  return Status::Corruption("manifest layer " + std::to_string(l.layer) + " " + why);
}

size_t ArraysFor(Kind kind) { return kind == Kind::kDsa ? 3 : 1; }

// Pieces of `len` bytes at `offset` of a stream cut at `chunk_bytes`.
void AddPieces(PutId owner, uint8_t array, uint64_t offset, uint64_t len, uint32_t chunk_bytes,
               uint64_t blob_offset, std::vector<LayerPiece>* out) {
  while (len > 0) {
    const uint64_t chunk = offset / chunk_bytes;
    const uint64_t in_chunk = offset % chunk_bytes;
    const uint64_t take = std::min<uint64_t>(len, chunk_bytes - in_chunk);
    out->push_back({owner, array, static_cast<uint32_t>(chunk), static_cast<uint32_t>(in_chunk),
                    static_cast<uint32_t>(take), blob_offset});
    offset += take;
    blob_offset += take;
    len -= take;
  }
}

}  // namespace

size_t HeaderBytes(Kind kind) { return kind == Kind::kOpaque ? 0 : 16; }

Result<LayerShape> ShapeOf(Kind kind, ByteSpan blob, const NamespaceSpec& spec) {
  LayerShape s;
  const size_t head = HeaderBytes(kind);
  if (blob.size() < head) return Status::InvalidArgument("blob shorter than its header");
  s.header.assign(blob.begin(), blob.begin() + head);
  switch (kind) {
    case Kind::kQsa:
      s.rows = internal::GetLE64(blob.data());  // ingested
      s.row_bytes = {spec.qsa.hd * 2};
      break;
    case Kind::kDsa: {
      s.rows = internal::GetLE64(blob.data());  // len
      const uint32_t d = static_cast<uint32_t>(internal::GetLE64(blob.data() + 8));
      s.row_bytes = {d * 2, d * 2, 1};
      break;
    }
    case Kind::kOpaque:
      s.rows = blob.size();
      s.row_bytes = {1};
      break;
  }
  return s;
}

Status CheckLayerLayout(const Manifest& m, const LayerEntry& l) {
  if (l.header.size() != HeaderBytes(l.kind)) {
    return Bad(l, "has a header of " + std::to_string(l.header.size()) + " bytes");
  }
  if (l.row_bytes.size() != ArraysFor(l.kind)) {
    return Bad(l, "has " + std::to_string(l.row_bytes.size()) + " arrays for its kind");
  }
  if (l.kind == Kind::kOpaque && (l.row_bytes[0] != 1 || l.rows != l.bytes || !l.runs.empty())) {
    return Bad(l, "is an opaque layer with rows, pages or a row size");
  }
  uint64_t total = l.header.size();
  for (uint32_t rb : l.row_bytes) {
    uint64_t part = 0;
    if (MulOverflows(l.rows, rb, &part) || AddOverflows(total, part, &total)) {
      return Bad(l, "has a size that overflows");
    }
  }
  if (total != l.bytes) {
    return Bad(l, "holds " + std::to_string(total) + " bytes of rows and header, not " +
                      std::to_string(l.bytes));
  }
  if (l.runs.empty()) return Status::Ok();
  if (m.page_tokens == 0) return Bad(l, "has pages but the manifest's page size is 0");
  uint32_t next = 0;
  bool own = false;
  for (const PageRun& r : l.runs) {
    if (r.pages == 0 || r.first_page != next || r.owner_first_page > r.first_page ||
        r.owner_chunk_bytes == 0) {
      return Bad(l, "has runs that do not cover its pages in order from page 0");
    }
    uint64_t end = 0;
    if (AddOverflows(next, r.pages, &end) || end > UINT32_MAX) return Bad(l, "has too many pages");
    next = static_cast<uint32_t>(end);
    const bool mine = r.owner == m.put_id;
    if (own && !mine) return Bad(l, "has pages of another put after its own");
    if (mine && !own && r.owner_chunk_bytes != m.chunk_bytes) {
      return Bad(l, "has its own pages cut at another chunk size");
    }
    if (mine && own) return Bad(l, "has its own pages in more than one run");
    if (mine && r.owner_first_page != r.first_page) {
      return Bad(l, "has its own pages at another page than they start");
    }
    own = own || mine;
  }
  uint64_t paged_rows = 0;
  if (MulOverflows(uint64_t{next}, m.page_tokens, &paged_rows) || paged_rows > l.rows) {
    return Bad(l, "has more pages than rows");
  }
  return Status::Ok();
}

uint32_t OwnFirstPage(const Manifest& m, const LayerEntry& l) {
  for (const PageRun& r : l.runs) {
    if (r.owner == m.put_id) return r.owner_first_page;
  }
  return l.full_pages();
}

uint64_t TailBytes(const Manifest& m, const LayerEntry& l, size_t a) {
  return (l.rows - uint64_t{l.full_pages()} * m.page_tokens) * l.row_bytes[a];
}

uint64_t OwnStreamBytes(const Manifest& m, const LayerEntry& l, size_t a) {
  const uint64_t own_pages = l.full_pages() - OwnFirstPage(m, l);
  return own_pages * m.page_tokens * l.row_bytes[a] + TailBytes(m, l, a);
}

uint64_t ArrayOffset(const LayerShape& s, size_t a) {
  uint64_t off = s.header.size();
  for (size_t i = 0; i < a; ++i) off += s.rows * s.row_bytes[i];
  return off;
}

uint64_t ArrayOffset(const LayerEntry& l, size_t a) {
  uint64_t off = l.header.size();
  for (size_t i = 0; i < a; ++i) off += l.rows * l.row_bytes[i];
  return off;
}

bool OwnsEveryRecord(const Manifest& m) {
  for (const LayerEntry& l : m.layers)
    for (const PageRun& r : l.runs)
      if (r.owner != m.put_id) return false;
  return true;
}

std::vector<PutId> UsedPuts(const Manifest& m) {
  std::vector<PutId> out{m.put_id};
  for (const LayerEntry& l : m.layers)
    for (const PageRun& r : l.runs) out.push_back(r.owner);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<LayerPiece> PlanPieces(const Manifest& m, const LayerEntry& l) {
  std::vector<LayerPiece> out;
  const uint64_t own_first = OwnFirstPage(m, l);
  for (size_t a = 0; a < l.row_bytes.size(); ++a) {
    const uint64_t page_bytes = uint64_t{m.page_tokens} * l.row_bytes[a];
    uint64_t blob = ArrayOffset(l, a);
    for (const PageRun& r : l.runs) {
      const uint64_t len = uint64_t{r.pages} * page_bytes;
      AddPieces(r.owner, static_cast<uint8_t>(a),
                uint64_t{r.first_page - r.owner_first_page} * page_bytes, len, r.owner_chunk_bytes,
                blob, &out);
      blob += len;
    }
    AddPieces(m.put_id, static_cast<uint8_t>(a), (l.full_pages() - own_first) * page_bytes,
              TailBytes(m, l, a), m.chunk_bytes, blob, &out);
  }
  return out;
}

namespace {

// XXH3 of no bytes: the hash of a part closed before any byte of it.
const uint64_t kEmptyXxh3 = XXH3_64bits(nullptr, 0);

void AppendHash(XXH3_state_t* outer, uint64_t h) {
  uint8_t le[8];
  internal::PutLE64(le, h);
  XXH3_64bits_update(outer, le, sizeof le);
}

}  // namespace

// Parts after the header: per array, its full pages, then its tail.
struct LayerHasher::State {
  uint64_t header_left = 0;
  boost::container::small_vector<uint64_t, 4> parts;  // lengths
  size_t part = 0;
  uint64_t in_part = 0;
  XXH3_state_t outer;
  XXH3_state_t inner;

  // A fresh state: this thread's spare when it has one. A small page's
  // layer costs no allocation (the states are over-aligned, and aligned
  // allocations skip malloc's per-thread cache): issue 24's page reads.
  static std::unique_ptr<State> Take() {
    std::unique_ptr<State> s = std::move(Spare());
    if (!s) s = std::make_unique<State>();
    s->header_left = 0;
    s->parts.clear();
    s->part = 0;
    s->in_part = 0;
    XXH3_INITSTATE(&s->outer);
    XXH3_INITSTATE(&s->inner);
    XXH3_64bits_reset(&s->outer);
    XXH3_64bits_reset(&s->inner);
    return s;
  }
  static void Give(std::unique_ptr<State> s) {
    if (s && !Spare()) Spare() = std::move(s);
  }
  static std::unique_ptr<State>& Spare() {
    thread_local std::unique_ptr<State> spare;
    return spare;
  }
};

LayerHasher::LayerHasher(const Manifest& m, const LayerEntry& l) : state_(State::Take()) {
  state_->header_left = l.header.size();
  const uint32_t pages = l.full_pages();
  for (size_t a = 0; a < l.row_bytes.size(); ++a) {
    const uint64_t page_bytes = uint64_t{m.page_tokens} * l.row_bytes[a];
    for (uint32_t p = 0; p < pages; ++p) state_->parts.push_back(page_bytes);
    state_->parts.push_back(TailBytes(m, l, a));
  }
}
LayerHasher::~LayerHasher() { State::Give(std::move(state_)); }
LayerHasher::LayerHasher(const LayerHasher& other) : state_(State::Take()) {
  *state_ = *other.state_;
}
LayerHasher& LayerHasher::operator=(const LayerHasher& other) {
  if (this != &other) *state_ = *other.state_;
  return *this;
}
LayerHasher::LayerHasher(LayerHasher&&) noexcept = default;
LayerHasher& LayerHasher::operator=(LayerHasher&&) noexcept = default;

void LayerHasher::Update(ByteSpan bytes) {
  State& s = *state_;
  if (s.header_left > 0) {
    const uint64_t take = std::min<uint64_t>(s.header_left, bytes.size());
    XXH3_64bits_update(&s.outer, bytes.data(), take);
    s.header_left -= take;
    bytes = bytes.subspan(take);
  }
  while (!bytes.empty()) {
    // Close the parts complete so far (zero-length ones at once).
    while (s.part < s.parts.size() && s.in_part == s.parts[s.part]) {
      AppendHash(&s.outer, XXH3_64bits_digest(&s.inner));
      XXH3_64bits_reset(&s.inner);
      ++s.part;
      s.in_part = 0;
    }
    if (s.part == s.parts.size()) {  // past the layout: hashed into the digest so it differs
      XXH3_64bits_update(&s.outer, bytes.data(), bytes.size());
      return;
    }
    const uint64_t take = std::min<uint64_t>(s.parts[s.part] - s.in_part, bytes.size());
    XXH3_64bits_update(&s.inner, bytes.data(), take);
    s.in_part += take;
    bytes = bytes.subspan(take);
  }
}

uint64_t LayerHasher::Digest() const {
  const State& s = *state_;
  if (s.header_left > 0) return ~XXH3_64bits_digest(&s.outer);  // short of its header
  // The parts still open closed on a copy of the outer state (Digest
  // leaves the hasher as it was): the current part's hash read from the
  // inner state as it is, any after it empty.
  XXH3_state_t outer;
  XXH3_copyState(&outer, &s.outer);
  size_t part = s.part;
  uint64_t fed = s.in_part;
  for (; part < s.parts.size() && fed == s.parts[part]; ++part, fed = 0) {
    AppendHash(&outer, fed == 0 ? kEmptyXxh3 : XXH3_64bits_digest(&s.inner));
  }
  return XXH3_64bits_digest(&outer);
}

uint64_t LayerDigest(ByteSpan header, const std::vector<std::vector<uint64_t>>& page_xxh3,
                     const std::vector<uint64_t>& tail_xxh3) {
  XXH3_state_t outer;
  XXH3_64bits_reset(&outer);
  XXH3_64bits_update(&outer, header.data(), header.size());
  for (size_t a = 0; a < tail_xxh3.size(); ++a) {
    if (a < page_xxh3.size()) {
      for (uint64_t h : page_xxh3[a]) AppendHash(&outer, h);
    }
    AppendHash(&outer, tail_xxh3[a]);
  }
  return XXH3_64bits_digest(&outer);
}

}  // namespace auxstore

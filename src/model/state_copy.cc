#include "model/state_copy.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "util/error.h"

namespace qinfer {

namespace {
constexpr size_t kHuge = size_t{2} << 20;
constexpr int64_t B = KvCache::kBlockTokens;
}  // namespace

size_t KvBlockCopy::size_for(int layers, int64_t width) {
  const size_t want = static_cast<size_t>(2 * layers * B * width) * sizeof(float);
  return want >= kHuge ? (want + kHuge - 1) / kHuge * kHuge : (want + 63) / 64 * 64;
}

KvBlockCopy::KvBlockCopy(int layers, int64_t width, int draft_layers)
    : layers_(layers), draft_layers_(draft_layers), width_(width), bytes_(size_for(layers + draft_layers, width)) {
  if (bytes_ == 0) return;
  const bool huge = bytes_ >= kHuge;
  data_ = static_cast<float*>(std::aligned_alloc(huge ? kHuge : 64, bytes_));
  if (!data_) throw std::bad_alloc();
  if (huge) madvise(data_, bytes_, MADV_HUGEPAGE);   // advice only, as in KvCache
}

KvBlockCopy::~KvBlockCopy() { std::free(data_); }

size_t RecurrentCopy::bytes() const {
  size_t n = 0;
  for (const auto& d : delta) n += (d.conv.size() + d.ssm.size()) * sizeof(float);
  return n;
}

size_t kv_block_copy_bytes(const StateShape& shape, bool draft_rows) {
  return KvBlockCopy::size_for(shape.num_full_layers + (draft_rows ? shape.num_mtp_layers : 0), shape.kv_width);
}

size_t recurrent_copy_bytes(const StateShape& shape) {
  return static_cast<size_t>(shape.num_linear_layers) *
         static_cast<size_t>(shape.conv_rows * shape.conv_dim + shape.ssm_size) * sizeof(float);
}

std::shared_ptr<const KvBlockCopy> copy_kv_block(const SequenceState& s, int64_t b, bool draft_rows) {
  const StateShape& sh = s.shape();
  if (b < 0 || (b + 1) * B > s.n_tokens()) {
    fail("copy_kv_block: block ", b, " (rows ", b * B, "..", (b + 1) * B - 1, ") is not complete: the sequence has ",
         s.n_tokens(), " tokens");
  }
  if (draft_rows && (sh.num_mtp_layers == 0 || (b + 1) * B > s.mtp_tokens())) {
    fail("copy_kv_block: block ", b, " has no complete MTP rows (the MTP cache holds ", s.mtp_tokens(), " of ",
         sh.num_mtp_layers, " layer(s))");
  }
  const int draft = draft_rows ? sh.num_mtp_layers : 0;
  auto c = std::make_shared<KvBlockCopy>(sh.num_full_layers, sh.kv_width, draft);
  const size_t row_bytes = static_cast<size_t>(sh.kv_width) * sizeof(float);
  for (int l = 0; l < sh.num_full_layers + draft; ++l) {
    const KvCache& kv = l < sh.num_full_layers ? s.kv(l) : s.mtp_kv(l - sh.num_full_layers);
    // One block of the cache is contiguous (B rows of every head).
    std::memcpy(c->k(l), kv.k_block(b), B * row_bytes);
    std::memcpy(c->v(l), kv.v_block(b), B * row_bytes);
  }
  return c;
}

std::shared_ptr<const RecurrentCopy> copy_recurrent(const SequenceState& s) {
  if (s.n_tokens() % B != 0) {
    fail("copy_recurrent: position ", s.n_tokens(), " is not a multiple of the block size ", B);
  }
  auto r = std::make_shared<RecurrentCopy>();
  r->position = s.n_tokens();
  for (int i = 0; i < s.shape().num_linear_layers; ++i) r->delta.push_back(s.delta(i));
  return r;
}

void restore_prefix(SequenceState& s, const std::vector<std::shared_ptr<const KvBlockCopy>>& blocks,
                    const RecurrentCopy& r) {
  const StateShape& sh = s.shape();
  if (s.n_tokens() != 0) fail("restore_prefix: the state is not empty (", s.n_tokens(), " tokens)");
  if (static_cast<int64_t>(blocks.size()) * B != r.position) {
    fail("restore_prefix: ", blocks.size(), " KV blocks do not reach the snapshot's position ", r.position);
  }
  if (static_cast<int>(r.delta.size()) != sh.num_linear_layers) {
    fail("restore_prefix: the snapshot has ", r.delta.size(), " DeltaNet layers, the model ", sh.num_linear_layers);
  }
  const int draft = blocks.empty() || !blocks[0] ? 0 : blocks[0]->draft_layers();
  for (const auto& b : blocks) {
    if (!b || b->layers() != sh.num_full_layers || b->width() != sh.kv_width || b->draft_layers() != draft) {
      fail("restore_prefix: a KV block does not fit the model's attention layers");
    }
  }
  if (draft != 0 && draft != sh.num_mtp_layers) {
    fail("restore_prefix: the blocks hold ", draft, " MTP layer(s), the state ", sh.num_mtp_layers);
  }
  for (int i = 0; i < sh.num_linear_layers; ++i) {
    const DeltaNetState& d = r.delta[i];
    if (static_cast<int64_t>(d.conv.size()) != sh.conv_rows * sh.conv_dim ||
        static_cast<int64_t>(d.ssm.size()) != sh.ssm_size) {
      fail("restore_prefix: DeltaNet layer ", i, " of the snapshot has the wrong size");
    }
  }
  for (const auto& b : blocks) {
    for (int l = 0; l < sh.num_full_layers; ++l) s.kv(l).attach(b->k(l), b->v(l));
    s.hold(b);
  }
  if (draft > 0 && !blocks.empty()) {
    // MTP rows: blocks 0..n-2 shared, the last one copied (its last row gets rewritten).
    const int64_t n = static_cast<int64_t>(blocks.size());
    const size_t rows_bytes = static_cast<size_t>(B * sh.kv_width) * sizeof(float);
    for (int i = 0; i < draft; ++i) {
      KvCache& c = s.mtp_kv(i);
      const int l = sh.num_full_layers + i;
      for (int64_t b = 0; b + 1 < n; ++b) c.attach(blocks[b]->k(l), blocks[b]->v(l));
      c.reserve(n * B);
      std::memcpy(c.k_block(n - 1), blocks[n - 1]->k(l), rows_bytes);
      std::memcpy(c.v_block(n - 1), blocks[n - 1]->v(l), rows_bytes);
    }
    s.advance_mtp(r.position - 1);
  }
  for (int i = 0; i < sh.num_linear_layers; ++i) s.delta(i) = r.delta[i];
  s.advance(r.position);
}

}  // namespace qinfer

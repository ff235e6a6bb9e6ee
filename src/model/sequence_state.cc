#include "model/sequence_state.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "ops/delta_rule.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace qinfer {

namespace {
constexpr size_t kHuge = size_t{2} << 20;
// Caches whose block pair (keys + values) is at least this large use huge-page
// chunks (the real model: 1 MiB pairs, two per chunk; the test fixtures: 128 KiB).
constexpr size_t kHugeMinPair = size_t{128} << 10;
}  // namespace

void KvCache::Free::operator()(void* p) const { std::free(p); }

KvCache::KvCache(int64_t width, int64_t heads) : width_(width), heads_(heads) {
  if (heads <= 0 || width < 0 || width % heads != 0)
    fail("KvCache: ", heads, " kv heads do not divide the row width ", width);
}

void KvCache::put(int64_t pos, const float* k, const float* v) {
  const int64_t hd = head_dim();
  for (int64_t g = 0; g < heads_; ++g) {
    std::memcpy(k_at(pos, g), k + g * hd, hd * sizeof(float));
    std::memcpy(v_at(pos, g), v + g * hd, hd * sizeof(float));
  }
}

void KvCache::reserve(int64_t tokens) {
  if (capacity() >= tokens) return;
  if (width_ <= 0) fail("KvCache::reserve: the cache has no row width (", width_, ")");
  const size_t block = static_cast<size_t>(kBlockTokens * width_) * sizeof(float), pair = 2 * block;
  while (capacity() < tokens) {
    if (chunks_.empty() || chunk_size_ - chunk_used_ < pair) {
      const bool huge = pair >= kHugeMinPair;
      const size_t size = huge ? (pair + kHuge - 1) / kHuge * kHuge : pair;
      void* p = std::aligned_alloc(huge ? kHuge : 64, size);
      if (!p) throw std::bad_alloc();
      if (huge) madvise(p, size, MADV_HUGEPAGE);   // advice only; ignored where THP is off
      chunks_.emplace_back(p);
      chunk_size_ = size;
      chunk_used_ = 0;
      bytes_ += size;
    }
    auto* at = static_cast<unsigned char*>(chunks_.back().get()) + chunk_used_;
    std::memset(at, 0, pair);
    k_.push_back(reinterpret_cast<float*>(at));
    v_.push_back(reinterpret_cast<float*>(at + block));
    chunk_used_ += pair;
  }
}

void KvCache::clear() {
  k_.clear();
  v_.clear();
  chunks_.clear();
  chunk_size_ = chunk_used_ = bytes_ = 0;
}

void KvCache::attach(const float* k, const float* v) {
  // Attached blocks come first (a restored prefix), before any block of the cache's own.
  if (!chunks_.empty()) fail("KvCache::attach: the cache already holds blocks of its own");
  k_.push_back(const_cast<float*>(k));
  v_.push_back(const_cast<float*>(v));
}

void KvCache::copy_from(const KvCache& o, int64_t tokens) {
  width_ = o.width_;
  heads_ = o.heads_;
  clear();
  reserve(tokens);
  for (size_t b = 0; b < k_.size(); ++b) {
    std::memcpy(k_[b], o.k_[b], kBlockTokens * width_ * sizeof(float));
    std::memcpy(v_[b], o.v_[b], kBlockTokens * width_ * sizeof(float));
  }
}

SequenceState::SequenceState(const StateShape& shape) : shape_(shape) {
  for (int i = 0; i < shape.num_full_layers; ++i) kv_.emplace_back(shape.kv_width, shape.kv_heads);
  for (int i = 0; i < shape.num_mtp_layers; ++i) mtp_kv_.emplace_back(shape.kv_width, shape.kv_heads);
  delta_.resize(shape.num_linear_layers);
  for (auto& d : delta_) {
    d.conv.assign(shape.conv_rows * shape.conv_dim, 0.0f);
    d.ssm.assign(shape.ssm_size, 0.0f);
  }
}

void SequenceState::reset() {
  seen_ = 0;
  verify_n_ = 0;
  mtp_seen_ = 0;
  for (auto& c : kv_) c.clear();
  held_.clear();
  for (auto& c : mtp_kv_) c.clear();
  for (auto& d : delta_) {
    std::fill(d.conv.begin(), d.conv.end(), 0.0f);
    std::fill(d.ssm.begin(), d.ssm.end(), 0.0f);
  }
}

size_t SequenceState::memory_bytes() const {
  size_t n = 0;
  for (const auto& c : kv_) n += c.bytes();
  for (const auto& c : mtp_kv_) n += c.bytes();
  for (const auto& d : delta_) n += (d.conv.size() + d.ssm.size()) * sizeof(float);
  return n;
}

void SequenceState::begin_verify(int64_t n) {
  verify_n_ = n > 0 ? n : 0;
  if (n <= 0) return;
  const size_t kv = static_cast<size_t>(shape_.key_heads * shape_.key_dim + shape_.value_heads * shape_.value_dim);
  for (auto& d : delta_) {
    // Grown, never shrunk: the buffers stay allocated (and faulted in) from step to step.
    d.spec_ssm.resize(static_cast<size_t>(shape_.ssm_size));
    d.spec_kv.resize(std::max(d.spec_kv.size(), static_cast<size_t>(n) * kv));
    d.spec_g.resize(std::max(d.spec_g.size(), static_cast<size_t>(n * shape_.value_heads)));
    d.spec_beta.resize(std::max(d.spec_beta.size(), static_cast<size_t>(n * shape_.value_heads)));
    d.spec_conv.resize(static_cast<size_t>((shape_.conv_rows + n) * shape_.conv_dim));
  }
}

void SequenceState::rollback(int64_t keep) {
  if (verify_n_ < 1) fail("rollback: the sequence has no pending verify step (Model::Step::keep_states)");
  if (keep < 1 || keep > verify_n_)
    fail("rollback: keep ", keep, " tokens is outside 1..", verify_n_, " (the verify step's tokens)");
  const int64_t drop = verify_n_ - keep;
  if (drop > 0) {
    seen_ -= drop;
    const size_t cd = static_cast<size_t>(shape_.conv_dim);
    const size_t rows = static_cast<size_t>(shape_.conv_rows);
    for (auto& d : delta_) {
      d.ssm.swap(d.spec_ssm);   // back to the state before the step
      // [old conv rows; inputs 0..n-1]: the state after input keep-1 is rows keep .. keep+rows-1.
      std::memcpy(d.conv.data(), d.spec_conv.data() + keep * cd, rows * cd * sizeof(float));
    }
    // The recurrent state after token keep-1: the delta rule of tokens 0..keep-1 again,
    // per (layer, value head), on their kept inputs (the verify pass ran the same
    // recurrent kernel on the same values: the same bits).
    const int64_t nv = shape_.value_heads, rep = nv / std::max<int64_t>(1, shape_.key_heads);
    const int64_t dk = shape_.key_dim, dv = shape_.value_dim, kdim = shape_.key_heads * dk;
    const int64_t row = kdim + nv * dv;
    parallel_for(static_cast<int64_t>(delta_.size()) * nv, 1, [&](int64_t i0, int64_t i1, int) {
      thread_local std::vector<float> o;
      o.resize(static_cast<size_t>(keep * dv));
      for (int64_t it = i0; it < i1; ++it) {
        DeltaNetState& d = delta_[static_cast<size_t>(it / nv)];
        const int64_t h = it % nv;
        ops::DeltaRuleIO io;
        io.T = keep;
        io.dk = dk;
        io.dv = dv;
        io.k = d.spec_kv.data() + (h / rep) * dk;
        io.q = io.k;   // the outputs are not wanted: any valid q
        io.v = d.spec_kv.data() + kdim + h * dv;
        io.q_stride = io.k_stride = io.v_stride = row;
        io.g = d.spec_g.data() + h;
        io.beta = d.spec_beta.data() + h;
        io.gb_stride = nv;
        io.o = o.data();
        io.o_stride = dv;
        io.S = d.ssm.data() + h * dk * dv;
        ops::delta_rule_recurrent(io);
      }
    });
  }
  verify_n_ = 0;
}

std::unique_ptr<SequenceState> SequenceState::clone() const {
  auto s = std::make_unique<SequenceState>(shape_);
  s->seen_ = seen_;
  s->mtp_seen_ = mtp_seen_;
  for (size_t i = 0; i < kv_.size(); ++i) s->kv_[i].copy_from(kv_[i], seen_);
  for (size_t i = 0; i < mtp_kv_.size(); ++i) s->mtp_kv_[i].copy_from(mtp_kv_[i], mtp_seen_);
  s->delta_ = delta_;
  s->verify_n_ = verify_n_;
  return s;
}

}  // namespace qinfer

#include "model/sequence_state.h"

#include <algorithm>
#include <cstring>

namespace qinfer {

void KvCache::reserve(int64_t tokens) {
  while (capacity() < tokens) {
    k_.emplace_back(new float[kBlockTokens * width_]());
    v_.emplace_back(new float[kBlockTokens * width_]());
  }
}

void KvCache::clear() {
  k_.clear();
  v_.clear();
}

void KvCache::copy_from(const KvCache& o, int64_t tokens) {
  width_ = o.width_;
  clear();
  reserve(tokens);
  for (size_t b = 0; b < k_.size(); ++b) {
    std::memcpy(k_[b].get(), o.k_[b].get(), kBlockTokens * width_ * sizeof(float));
    std::memcpy(v_[b].get(), o.v_[b].get(), kBlockTokens * width_ * sizeof(float));
  }
}

SequenceState::SequenceState(const StateShape& shape) : shape_(shape) {
  for (int i = 0; i < shape.num_full_layers; ++i) kv_.emplace_back(shape.kv_width);
  for (int i = 0; i < shape.num_mtp_layers; ++i) mtp_kv_.emplace_back(shape.kv_width);
  delta_.resize(shape.num_linear_layers);
  for (auto& d : delta_) {
    d.conv.assign(shape.conv_rows * shape.conv_dim, 0.0f);
    d.ssm.assign(shape.ssm_size, 0.0f);
  }
}

void SequenceState::reset() {
  seen_ = 0;
  mtp_seen_ = 0;
  for (auto& c : kv_) c.clear();
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

std::unique_ptr<SequenceState> SequenceState::clone() const {
  auto s = std::make_unique<SequenceState>(shape_);
  s->seen_ = seen_;
  s->mtp_seen_ = mtp_seen_;
  for (size_t i = 0; i < kv_.size(); ++i) s->kv_[i].copy_from(kv_[i], seen_);
  for (size_t i = 0; i < mtp_kv_.size(); ++i) s->mtp_kv_[i].copy_from(mtp_kv_[i], mtp_seen_);
  s->delta_ = delta_;
  return s;
}

}  // namespace qinfer

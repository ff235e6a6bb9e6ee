#include "vision/vision_tower.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "ops/attention_kernels.h"
#include "ops/vec_math.h"
#include "util/error.h"
#include "util/log.h"
#include "util/thread_pool.h"

namespace qinfer::vision {

struct VisionTower::Block {
  std::vector<float> norm1_w, norm1_b, norm2_w, norm2_b;
  ops::DenseMatrix qkv, proj, fc1, fc2;
  std::vector<float> qkv_b, proj_b, fc1_b, fc2_b;
};

VisionTower::~VisionTower() = default;

namespace {

class Binder {
 public:
  Binder(const std::map<std::string, const TensorInfo*>& t, std::string prefix) : t_(t), prefix_(std::move(prefix)) {}

  const TensorInfo& get(const std::string& name, const std::vector<int64_t>& shape) {
    const std::string full = prefix_ + name;
    auto it = t_.find(full);
    if (it == t_.end() || !it->second) fail("vision tower: tensor ", full, " is missing from the checkpoint");
    const TensorInfo& ti = *it->second;
    ti.expect_dtype({DType::BF16, DType::F16, DType::F32});
    ti.expect_shape(shape);
    used_.insert(full);
    return ti;
  }
  std::vector<float> floats(const std::string& name, const std::vector<int64_t>& shape) {
    const TensorInfo& ti = get(name, shape);
    std::vector<float> out(ti.numel());
    const uint8_t* p = ti.data;
    for (int64_t i = 0; i < ti.numel(); ++i) {
      uint16_t h;
      switch (ti.dtype) {
        case DType::F32: std::memcpy(&out[i], p + 4 * i, 4); break;
        case DType::BF16: std::memcpy(&h, p + 2 * i, 2); out[i] = bf16_to_f32(h); break;
        default: std::memcpy(&h, p + 2 * i, 2); out[i] = f16_to_f32(h); break;
      }
    }
    return out;
  }
  ops::DenseMatrix matrix(const std::string& name, const std::vector<int64_t>& shape, int64_t rows, int64_t cols) {
    const TensorInfo& ti = get(name, shape);
    const ops::WType wt = ti.dtype == DType::BF16 ? ops::WType::BF16
                          : ti.dtype == DType::F16 ? ops::WType::F16 : ops::WType::F32;
    return ops::dense_view(wt, ti.data, rows, cols);
  }
  // Every tensor under the prefix must have been bound.
  void check_no_extra() const {
    for (const auto& [name, ti] : t_) {
      if (name.compare(0, prefix_.size(), prefix_) != 0 || used_.count(name)) continue;
      fail("vision tower: unexpected tensor ", name, " in ", ti ? ti->file : std::string("the checkpoint"),
           " (not part of the Qwen3.5/3.6 vision tower; deepstack mergers are not supported)");
    }
  }
  size_t used() const { return used_.size(); }

 private:
  const std::map<std::string, const TensorInfo*>& t_;
  std::string prefix_;
  std::set<std::string> used_;
};

void layer_norm_rows(const float* x, const float* w, const float* b, int64_t rows, int64_t n, float* y) {
  parallel_for(rows, 16, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * n;
      float* yr = y + r * n;
      double s = 0;
      for (int64_t i = 0; i < n; ++i) s += xr[i];
      const float mean = static_cast<float>(s / n);
      double v = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double d = xr[i] - mean;
        v += d * d;
      }
      const float inv = static_cast<float>(1.0 / std::sqrt(v / n + 1e-6));
      for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] - mean) * inv * w[i] + b[i];
    }
  });
}

void add_bias(float* y, const float* b, int64_t rows, int64_t n) {
  parallel_for(rows, 16, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t i = 0; i < n; ++i) y[r * n + i] += b[i];
  });
}

// x += y + b
void add_residual(float* x, const float* y, const float* b, int64_t rows, int64_t n) {
  parallel_for(rows, 16, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t i = 0; i < n; ++i) x[r * n + i] += y[r * n + i] + b[i];
  });
}

// y = gelu_tanh(y + b) in place: 0.5 x (1 + tanh(u)) = x * sigmoid(2u), u = sqrt(2/pi)(x + 0.044715 x^3).
void bias_gelu_tanh(float* y, const float* b, int64_t rows, int64_t n) {
  parallel_for(rows, 4, [&](int64_t r0, int64_t r1, int) {
    std::vector<float> e(n);
    const float k = 0.7978845608028654f;
    for (int64_t r = r0; r < r1; ++r) {
      float* yr = y + r * n;
      for (int64_t i = 0; i < n; ++i) {
        const float x = yr[i] + b[i];
        yr[i] = x;
        e[i] = -2.0f * k * (x + 0.044715f * x * x * x);
      }
      ops::vexp(e.data(), n, e.data());
      for (int64_t i = 0; i < n; ++i) yr[i] = yr[i] / (1.0f + e[i]);
    }
  });
}

void bias_gelu_erf(float* y, const float* b, int64_t rows, int64_t n) {
  parallel_for(rows, 4, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t i = 0; i < n; ++i) {
        const float x = y[r * n + i] + b[i];
        y[r * n + i] = 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f));
      }
  });
}

// (row, col) of patch k of an h x w grid in merge-block order.
void patch_coords(int64_t k, int64_t w, int64_t m, int64_t* row, int64_t* col) {
  const int64_t bw = w / m;
  const int64_t in_col = k % m, in_row = (k / m) % m, blk = k / (m * m);
  *row = (blk / bw) * m + in_row;
  *col = (blk % bw) * m + in_col;
}

}  // namespace

std::unique_ptr<VisionTower> VisionTower::load(const VisionConfig& cfg,
                                               const std::map<std::string, const TensorInfo*>& tensors,
                                               const std::string& prefix) {
  auto t = std::unique_ptr<VisionTower>(new VisionTower());
  t->cfg_ = cfg;
  Binder b(tensors, prefix);
  const int64_t H = cfg.hidden_size, I = cfg.intermediate_size, C = cfg.in_channels, P = cfg.patch_size,
                T = cfg.temporal_patch_size, M = cfg.merge_width(), O = cfg.out_hidden_size;
  t->patch_w_ = b.matrix("patch_embed.proj.weight", {H, C, T, P, P}, H, cfg.patch_values());
  t->patch_b_ = b.floats("patch_embed.proj.bias", {H});
  t->pos_table_ = b.floats("pos_embed.weight", {cfg.num_position_embeddings, H});
  t->blocks_.resize(cfg.depth);
  for (int i = 0; i < cfg.depth; ++i) {
    Block& k = t->blocks_[i];
    const std::string p = "blocks." + std::to_string(i) + ".";
    k.norm1_w = b.floats(p + "norm1.weight", {H});
    k.norm1_b = b.floats(p + "norm1.bias", {H});
    k.qkv = b.matrix(p + "attn.qkv.weight", {3 * H, H}, 3 * H, H);
    k.qkv_b = b.floats(p + "attn.qkv.bias", {3 * H});
    k.proj = b.matrix(p + "attn.proj.weight", {H, H}, H, H);
    k.proj_b = b.floats(p + "attn.proj.bias", {H});
    k.norm2_w = b.floats(p + "norm2.weight", {H});
    k.norm2_b = b.floats(p + "norm2.bias", {H});
    k.fc1 = b.matrix(p + "mlp.linear_fc1.weight", {I, H}, I, H);
    k.fc1_b = b.floats(p + "mlp.linear_fc1.bias", {I});
    k.fc2 = b.matrix(p + "mlp.linear_fc2.weight", {H, I}, H, I);
    k.fc2_b = b.floats(p + "mlp.linear_fc2.bias", {H});
  }
  t->merger_norm_w_ = b.floats("merger.norm.weight", {H});
  t->merger_norm_b_ = b.floats("merger.norm.bias", {H});
  t->merger_w1_ = b.matrix("merger.linear_fc1.weight", {M, M}, M, M);
  t->merger_b1_ = b.floats("merger.linear_fc1.bias", {M});
  t->merger_w2_ = b.matrix("merger.linear_fc2.weight", {O, M}, O, M);
  t->merger_b2_ = b.floats("merger.linear_fc2.bias", {O});
  b.check_no_extra();
  t->n_tensors_ = static_cast<int64_t>(b.used());
  return t;
}

size_t VisionTower::weight_bytes() const {
  size_t n = patch_w_.bytes() + merger_w1_.bytes() + merger_w2_.bytes() + pos_table_.size() * 4;
  for (const Block& k : blocks_) n += k.qkv.bytes() + k.proj.bytes() + k.fc1.bytes() + k.fc2.bytes();
  return n;
}

VisionFlops VisionTower::flops(const std::vector<const ImagePatches*>& images) const {
  const double H = cfg_.hidden_size, I = cfg_.intermediate_size, M = static_cast<double>(cfg_.merge_width()),
               O = cfg_.out_hidden_size, D = cfg_.depth, K = static_cast<double>(cfg_.patch_values());
  VisionFlops f;
  for (const ImagePatches* img : images) {
    const double N = static_cast<double>(img->patches()), frame = static_cast<double>(img->grid_h * img->grid_w);
    const double merged = N / (cfg_.spatial_merge_size * cfg_.spatial_merge_size);
    f.embed += 2 * N * K * H;
    f.qkv += D * 2 * N * H * 3 * H;
    f.attention += D * 4 * N * frame * H;
    f.proj += D * 2 * N * H * H;
    f.fc1 += D * 2 * N * H * I;
    f.fc2 += D * 2 * N * I * H;
    f.merger += 2 * merged * (M * M + M * O);
  }
  return f;
}

std::vector<const ops::DenseMatrix*> VisionTower::block_matrices() const {
  const Block& k = blocks_.at(0);
  return {&k.qkv, &k.proj, &k.fc1, &k.fc2};
}

std::vector<float> VisionTower::forward(const std::vector<const ImagePatches*>& images, VisionTrace* trace,
                                       VisionTimes* times) const {
  const double t_start = now_seconds();
  double t_mark = t_start;
  auto lap = [&](double VisionTimes::*stage) {   // adds the time since the last lap to `stage`
    if (!times) return;
    const double t = now_seconds();
    times->*stage += t - t_mark;
    t_mark = t;
  };
  const VisionConfig& c = cfg_;
  const int64_t H = c.hidden_size, hd = c.head_dim(), nh = c.num_heads, m = c.spatial_merge_size;
  const int64_t K = c.patch_values(), side = c.grid_side();
  if (images.empty()) return {};
  // Patch rows of all images, and per patch its (row, col) and image frame.
  int64_t N = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    const ImagePatches& im = *images[i];
    if (im.grid_h % m || im.grid_w % m || im.grid_h < 1 || im.grid_w < 1 || im.grid_t < 1)
      fail("vision tower: image ", i, " has a patch grid ", im.grid_h, "x", im.grid_w, " that is not a multiple of the merge size ", m);
    if (static_cast<int64_t>(im.pixel_values.size()) != im.patches() * K)
      fail("vision tower: image ", i, " has ", im.pixel_values.size(), " pixel values, expected ", im.patches() * K);
    N += im.patches();
  }
  std::vector<float> X(N * H), pv(N * K);
  std::vector<int64_t> prow(N), pcol(N), pgrid_h(N), pgrid_w(N);
  struct Segment { int64_t begin, n; };
  std::vector<Segment> segs;
  {
    int64_t r = 0;
    for (const ImagePatches* im : images) {
      std::memcpy(pv.data() + r * K, im->pixel_values.data(), im->pixel_values.size() * sizeof(float));
      const int64_t frame = im->grid_h * im->grid_w;
      for (int64_t t = 0; t < im->grid_t; ++t) {
        segs.push_back({r, frame});
        for (int64_t k = 0; k < frame; ++k, ++r) {
          patch_coords(k, im->grid_w, m, &prow[r], &pcol[r]);
          pgrid_h[r] = im->grid_h;
          pgrid_w[r] = im->grid_w;
        }
      }
    }
  }
  // 1. patch embedding
  ops::matmul(patch_w_, pv.data(), N, X.data());
  add_bias(X.data(), patch_b_.data(), N, H);
  pv = {};
  if (trace) trace->patch_embed = X;
  // 2. bilinear (align_corners) resampled position table, float32 as transformers.
  std::vector<float> pos(trace ? N * H : 0);
  parallel_for(N, 16, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      auto taps = [&](int64_t idx, int64_t size, int64_t* t0, int64_t* t1, float* w0, float* w1) {
        const float src = static_cast<float>(idx) * static_cast<float>(side - 1) / static_cast<float>(std::max<int64_t>(size - 1, 1));
        const float fl = std::floor(src);
        *t0 = std::min<int64_t>(static_cast<int64_t>(fl), side - 1);
        *t1 = std::min<int64_t>(static_cast<int64_t>(fl) + 1, side - 1);
        *w0 = std::max(0.0f, 1.0f - std::fabs(src - fl));
        *w1 = std::max(0.0f, 1.0f - std::fabs(src - fl - 1.0f));
      };
      int64_t r0t, r1t, c0t, c1t;
      float wr0, wr1, wc0, wc1;
      taps(prow[r], pgrid_h[r], &r0t, &r1t, &wr0, &wr1);
      taps(pcol[r], pgrid_w[r], &c0t, &c1t, &wc0, &wc1);
      const float* e00 = pos_table_.data() + (r0t * side + c0t) * H;
      const float* e01 = pos_table_.data() + (r0t * side + c1t) * H;
      const float* e10 = pos_table_.data() + (r1t * side + c0t) * H;
      const float* e11 = pos_table_.data() + (r1t * side + c1t) * H;
      const float w00 = wr0 * wc0, w01 = wr0 * wc1, w10 = wr1 * wc0, w11 = wr1 * wc1;
      float* x = X.data() + r * H;
      for (int64_t i = 0; i < H; ++i) {
        const float p = ((e00[i] * w00 + e01[i] * w01) + e10[i] * w10) + e11[i] * w11;
        if (trace) pos[r * H + i] = p;
        x[i] += p;
      }
    }
  });
  if (trace) {
    trace->pos_embed = pos;
    trace->embeddings = X;
  }
  // 3. 2-D rotary tables [N][hd/2]: angles (row * inv, col * inv), written once
  // (the second half of the head repeats them).
  const int64_t q4 = hd / 4, half = hd / 2;
  std::vector<float> inv(q4);
  for (int64_t j = 0; j < q4; ++j) {
    const float e = static_cast<float>(2 * j) / static_cast<float>(half);
    inv[j] = 1.0f / std::pow(static_cast<float>(c.rope_theta), e);
  }
  std::vector<float> cs(N * half), sn(N * half);
  for (int64_t r = 0; r < N; ++r)
    for (int64_t j = 0; j < q4; ++j) {
      const float a0 = static_cast<float>(prow[r]) * inv[j], a1 = static_cast<float>(pcol[r]) * inv[j];
      cs[r * half + j] = std::cos(a0);
      sn[r * half + j] = std::sin(a0);
      cs[r * half + q4 + j] = std::cos(a1);
      sn[r * half + q4 + j] = std::sin(a1);
    }
  if (trace) {
    trace->rope_cos.resize(N * hd);
    trace->rope_sin.resize(N * hd);
    for (int64_t r = 0; r < N; ++r)
      for (int64_t i = 0; i < hd; ++i) {
        trace->rope_cos[r * hd + i] = cs[r * half + i % half];
        trace->rope_sin[r * hd + i] = sn[r * half + i % half];
      }
  }
  // 4. blocks
  const int64_t I = c.intermediate_size;
  const int64_t chunk = std::min<int64_t>(N, 2048);   // MLP rows per pass (bounds the fc1 buffer)
  std::vector<float> Y(N * H), qkv(N * 3 * H), att(N * H), proj(N * H), mid(chunk * I);
  std::vector<int64_t> seg_pos(N);
  for (const Segment& s : segs)
    for (int64_t t = 0; t < s.n; ++t) seg_pos[s.begin + t] = s.n - 1;   // full attention inside the segment
  std::vector<const float*> kbase(segs.size()), vbase(segs.size());
  std::vector<ops::AttentionSeq> aseqs(segs.size());
  ops::AttentionShape shape;
  shape.heads = nh;
  shape.kv_heads = nh;
  shape.head_dim = hd;
  shape.q_stride = 3 * H;
  shape.out_stride = H;
  shape.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  if (trace) trace->block_out.clear();
  lap(&VisionTimes::embed);
  for (int bi = 0; bi < c.depth; ++bi) {
    const Block& k = blocks_[bi];
    layer_norm_rows(X.data(), k.norm1_w.data(), k.norm1_b.data(), N, H, Y.data());
    if (trace && bi == 0) trace->block0_norm1 = Y;
    lap(&VisionTimes::norms);
    ops::matmul(k.qkv, Y.data(), N, qkv.data());
    add_bias(qkv.data(), k.qkv_b.data(), N, 3 * H);
    if (trace && bi == 0) trace->block0_qkv = qkv;
    lap(&VisionTimes::qkv);
    // rotary on q and k, every head, all head_dim values (rotate-half)
    parallel_for(N, 16, [&](int64_t r0, int64_t r1, int) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* cr = cs.data() + r * half;
        const float* sr = sn.data() + r * half;
        for (int64_t part = 0; part < 2; ++part)
          for (int64_t h = 0; h < nh; ++h) {
            float* v = qkv.data() + r * 3 * H + part * H + h * hd;
            for (int64_t i = 0; i < half; ++i) {
              const float a = v[i], b2 = v[i + half];
              v[i] = a * cr[i] - b2 * sr[i];
              v[i + half] = b2 * cr[i] + a * sr[i];
            }
          }
      }
    });
    if (trace && bi == 0) {
      trace->block0_q_rot.resize(N * H);
      trace->block0_k_rot.resize(N * H);
      for (int64_t r = 0; r < N; ++r) {
        std::memcpy(&trace->block0_q_rot[r * H], &qkv[r * 3 * H], H * 4);
        std::memcpy(&trace->block0_k_rot[r * H], &qkv[r * 3 * H + H], H * 4);
      }
    }
    lap(&VisionTimes::rope);
    for (size_t s = 0; s < segs.size(); ++s) {
      kbase[s] = qkv.data() + segs[s].begin * 3 * H + H;
      vbase[s] = qkv.data() + segs[s].begin * 3 * H + 2 * H;
      ops::AttentionSeq& q = aseqs[s];
      q.q = qkv.data() + segs[s].begin * 3 * H;
      q.out = att.data() + segs[s].begin * H;
      q.pos = seg_pos.data() + segs[s].begin;
      q.rows = segs[s].n;
      q.k = {&kbase[s], segs[s].n, 3 * H, shape.head_dim};
      q.v = {&vbase[s], segs[s].n, 3 * H, shape.head_dim};
    }
    ops::attention(shape, aseqs.data(), aseqs.size());
    if (trace && bi == 0) trace->block0_attn_core = att;
    lap(&VisionTimes::attention);
    ops::matmul(k.proj, att.data(), N, proj.data());
    if (trace && bi == 0) {
      trace->block0_attn_out = proj;
      add_bias(trace->block0_attn_out.data(), k.proj_b.data(), N, H);
    }
    add_residual(X.data(), proj.data(), k.proj_b.data(), N, H);
    lap(&VisionTimes::proj);
    layer_norm_rows(X.data(), k.norm2_w.data(), k.norm2_b.data(), N, H, Y.data());
    lap(&VisionTimes::norms);
    for (int64_t r0 = 0; r0 < N; r0 += chunk) {
      const int64_t n = std::min(chunk, N - r0);
      ops::matmul(k.fc1, Y.data() + r0 * H, n, mid.data());
      lap(&VisionTimes::fc1);
      if (c.hidden_act == "gelu") bias_gelu_erf(mid.data(), k.fc1_b.data(), n, I);
      else bias_gelu_tanh(mid.data(), k.fc1_b.data(), n, I);
      lap(&VisionTimes::gelu);
      ops::matmul(k.fc2, mid.data(), n, proj.data() + r0 * H);
      lap(&VisionTimes::fc2);
    }
    if (trace && bi == 0) {
      trace->block0_mlp_out = std::vector<float>(proj.begin(), proj.begin() + N * H);
      add_bias(trace->block0_mlp_out.data(), k.fc2_b.data(), N, H);
    }
    add_residual(X.data(), proj.data(), k.fc2_b.data(), N, H);
    if (trace) trace->block_out.push_back(X);
    lap(&VisionTimes::fc2);
  }
  if (trace) trace->last_hidden_state = X;
  qkv = {};
  mid = {};
  // 5. merger: LayerNorm per patch, 4 consecutive patches -> one row, fc1, erf GELU, fc2.
  layer_norm_rows(X.data(), merger_norm_w_.data(), merger_norm_b_.data(), N, H, Y.data());
  const int64_t Nm = N / (m * m), MW = c.merge_width(), O = c.out_hidden_size;
  std::vector<float> u(Nm * MW), out(Nm * O);
  ops::matmul(merger_w1_, Y.data(), Nm, u.data());
  bias_gelu_erf(u.data(), merger_b1_.data(), Nm, MW);
  ops::matmul(merger_w2_, u.data(), Nm, out.data());
  add_bias(out.data(), merger_b2_.data(), Nm, O);
  lap(&VisionTimes::merger);
  if (times) times->total += now_seconds() - t_start;
  return out;
}

}  // namespace qinfer::vision

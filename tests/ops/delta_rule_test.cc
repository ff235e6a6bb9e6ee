// The gated delta rule: every path this CPU runs against the scalar twins,
// chunked against recurrent for several chunk sizes, and the recurrent form
// against a plain double-precision evaluation; awkward head sizes and strided
// inputs (the model's q/k/v rows sit inside one wide activation row).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ops/delta_rule.h"
#include "ops/seq_kernel_table.h"
#include "util/error.h"

namespace qinfer::ops {
namespace {

struct Inputs {
  int64_t T, dk, dv, stride;
  std::vector<float> act, g, beta, S0;   // act: [T][stride] holding q | k | v

  Inputs(int64_t T_, int64_t dk_, int64_t dv_, uint32_t seed) : T(T_), dk(dk_), dv(dv_), stride(2 * dk_ + dv_ + 3) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::uniform_real_distribution<float> ud(0.0f, 1.0f);
    act.resize(T * stride);
    for (auto& x : act) x = nd(rng);
    auto l2 = [&](float* x, float scale) {
      float s = 0;
      for (int64_t i = 0; i < dk; ++i) s += x[i] * x[i];
      for (int64_t i = 0; i < dk; ++i) x[i] *= scale / std::sqrt(s + 1e-6f);
    };
    for (int64_t t = 0; t < T; ++t) {
      l2(&act[t * stride], 1.0f / std::sqrt(float(dk)));
      l2(&act[t * stride + dk], 1.0f);
      g.push_back(-2.0f * ud(rng));
      beta.push_back(ud(rng));
    }
    S0.resize(dk * dv);
    for (auto& x : S0) x = 0.3f * nd(rng);
  }
  DeltaRuleIO io(std::vector<float>& o, std::vector<float>& S) const {
    o.assign(T * dv, NAN);
    S = S0;
    DeltaRuleIO io;
    io.T = T; io.dk = dk; io.dv = dv;
    io.q = act.data(); io.k = act.data() + dk; io.v = act.data() + 2 * dk;
    io.q_stride = io.k_stride = io.v_stride = stride;
    io.g = g.data(); io.beta = beta.data(); io.gb_stride = 1;
    io.o = o.data(); io.o_stride = dv; io.S = S.data();
    return io;
  }
};

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(double(a[i]) - double(b[i]));
    if (!(d <= worst)) worst = d;
  }
  return worst;
}

struct Result {
  std::vector<float> o, S;
};

Result recurrent(const detail::SeqKernelTable& kt, const Inputs& in) {
  Result r;
  std::vector<float> work(detail::delta_work_floats(in.dk, in.dv, 0));
  kt.delta_recurrent(in.io(r.o, r.S), work.data());
  return r;
}

Result chunked(const detail::SeqKernelTable& kt, const Inputs& in, int64_t C) {
  Result r;
  std::vector<float> work(detail::delta_work_floats(in.dk, in.dv, C));
  kt.delta_chunked(in.io(r.o, r.S), C, work.data());
  return r;
}

struct Dims {
  int64_t T, dk, dv;
};
const Dims kDims[] = {{150, 16, 24}, {70, 20, 37}, {9, 128, 128}, {65, 13, 8}, {1, 33, 17}};

TEST(DeltaRule, EveryPathMatchesScalarTwins) {
  uint32_t seed = 1;
  for (const std::string& path : detail::seq_kernel_paths()) {
    const detail::SeqKernelTable& kt = *detail::seq_kernels_for(path);
    for (const Dims& d : kDims) {
      const Inputs in(d.T, d.dk, d.dv, seed++);
      const Result want = recurrent(detail::seq_scalar_kernels(), in), got = recurrent(kt, in);
      EXPECT_LT(max_diff(got.o, want.o), 2e-5) << path << " recurrent T " << d.T << " dk " << d.dk << " dv " << d.dv;
      EXPECT_LT(max_diff(got.S, want.S), 2e-5) << path << " recurrent T " << d.T << " dk " << d.dk << " dv " << d.dv;
      for (int64_t C : {1, 7, 64}) {
        const Result cw = chunked(detail::seq_scalar_kernels(), in, C), cg = chunked(kt, in, C);
        EXPECT_LT(max_diff(cg.o, cw.o), 2e-5) << path << " chunked C " << C << " T " << d.T << " dk " << d.dk;
        EXPECT_LT(max_diff(cg.S, cw.S), 2e-5) << path << " chunked C " << C << " T " << d.T << " dk " << d.dk;
      }
    }
  }
}

// Out of place (S_in): the same bits as in place, S_in untouched, on every path and for
// both forms (a speculative verify runs it out of place, decode in place, and a rollback
// replays in place: greedy speculation relies on their bits being equal).
TEST(DeltaRule, OutOfPlaceIsInPlaceBitForBit) {
  uint32_t seed = 90;
  for (const std::string& path : detail::seq_kernel_paths()) {
    const detail::SeqKernelTable& kt = *detail::seq_kernels_for(path);
    for (const Dims& d : kDims) {
      const Inputs in(d.T, d.dk, d.dv, seed++);
      const Result want = recurrent(kt, in);
      Result got;
      std::vector<float> scratch;
      DeltaRuleIO io = in.io(got.o, scratch);
      const std::vector<float> before = in.S0;
      got.S.assign(d.dk * d.dv, NAN);
      io.S_in = before.data();
      io.S = got.S.data();
      std::vector<float> work(detail::delta_work_floats(in.dk, in.dv, 0));
      kt.delta_recurrent(io, work.data());
      EXPECT_TRUE(got.S == want.S) << path << " recurrent T " << d.T << " dk " << d.dk << " dv " << d.dv;
      EXPECT_TRUE(got.o == want.o) << path << " recurrent T " << d.T << " dk " << d.dk << " dv " << d.dv;
      EXPECT_TRUE(before == in.S0) << path << ": S_in was written";
    }
  }
  // The entry points: recurrent out of place, chunked (copies S_in first), overlap refused.
  const Inputs in(40, 16, 24, 7);
  Result a, b;
  std::vector<float> s1, s2;
  DeltaRuleIO io = in.io(a.o, a.S);
  delta_rule_chunked(io, 16);
  DeltaRuleIO oop = in.io(b.o, s1);
  s2.assign(in.dk * in.dv, NAN);
  oop.S_in = s1.data();
  oop.S = s2.data();
  delta_rule_chunked(oop, 16);
  EXPECT_TRUE(s2 == a.S);
  EXPECT_TRUE(b.o == a.o);
  std::vector<float> big(3 * in.dk * in.dv, 0.0f);
  oop.S_in = big.data();
  oop.S = big.data() + 5;
  EXPECT_THROW(delta_rule_recurrent(oop), Error);
  oop.S = big.data() + in.dk * in.dv;   // adjacent: fine
  EXPECT_NO_THROW(delta_rule_recurrent(oop));
}

// T tokens in one recurrent call (a verify pass; the SIMD paths sum each later token's
// Sᵀk inside the previous token's update pass) give the bits of T calls of one token
// (decode), on every path, for awkward value dims (vector tails).
TEST(DeltaRule, RecurrentTokensAtOnceAreTokensOneByOne) {
  uint32_t seed = 120;
  for (const std::string& path : detail::seq_kernel_paths()) {
    const detail::SeqKernelTable& kt = *detail::seq_kernels_for(path);
    for (const Dims& d : kDims) {
      const Inputs in(std::min<int64_t>(d.T, 9), d.dk, d.dv, seed++);
      const Result all = recurrent(kt, in);
      Result one;
      DeltaRuleIO io = in.io(one.o, one.S);
      std::vector<float> work(detail::delta_work_floats(in.dk, in.dv, 0));
      for (int64_t t = 0; t < in.T; ++t) {
        DeltaRuleIO step = io;
        step.T = 1;
        step.q = io.q + t * io.q_stride;
        step.k = io.k + t * io.k_stride;
        step.v = io.v + t * io.v_stride;
        step.g = io.g + t;
        step.beta = io.beta + t;
        step.o = io.o + t * io.o_stride;
        kt.delta_recurrent(step, work.data());
      }
      EXPECT_TRUE(all.S == one.S) << path << " T " << in.T << " dk " << d.dk << " dv " << d.dv;
      EXPECT_TRUE(all.o == one.o) << path << " T " << in.T << " dk " << d.dk << " dv " << d.dv;
    }
  }
}

TEST(DeltaRule, ChunkedEqualsRecurrent) {
  uint32_t seed = 50;
  for (const std::string& path : detail::seq_kernel_paths()) {
    const detail::SeqKernelTable& kt = *detail::seq_kernels_for(path);
    for (const Dims& d : kDims) {
      const Inputs in(d.T, d.dk, d.dv, seed++);
      const Result rec = recurrent(kt, in);
      for (int64_t C : {1, 7, 16, 64}) {
        const Result ch = chunked(kt, in, C);
        EXPECT_LT(max_diff(ch.o, rec.o), 2e-5) << path << " C " << C << " T " << d.T << " dk " << d.dk;
        EXPECT_LT(max_diff(ch.S, rec.S), 2e-5) << path << " C " << C << " T " << d.T << " dk " << d.dk;
      }
    }
  }
}

// The recurrence evaluated in double precision straight from the definition.
TEST(DeltaRule, RecurrentMatchesDoublePrecision) {
  const Inputs in(150, 16, 24, 5);
  const int64_t dk = in.dk, dv = in.dv;
  std::vector<double> Sd(in.S0.begin(), in.S0.end()), want;
  for (int64_t t = 0; t < in.T; ++t) {
    const float* q = &in.act[t * in.stride];
    const float* k = q + dk;
    const float* v = k + dk;
    const double dec = std::exp(double(in.g[t]));
    std::vector<double> pred(dv, 0.0), u(dv), o(dv, 0.0);
    for (int64_t i = 0; i < dk; ++i)
      for (int64_t j = 0; j < dv; ++j) pred[j] += k[i] * (Sd[i * dv + j] *= dec);
    for (int64_t j = 0; j < dv; ++j) u[j] = in.beta[t] * (v[j] - pred[j]);
    for (int64_t i = 0; i < dk; ++i)
      for (int64_t j = 0; j < dv; ++j) o[j] += q[i] * (Sd[i * dv + j] += k[i] * u[j]);
    want.insert(want.end(), o.begin(), o.end());
  }
  for (const std::string& path : detail::seq_kernel_paths()) {
    const Result r = recurrent(*detail::seq_kernels_for(path), in);
    double worst = 0;
    for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(want[i] - r.o[i]));
    EXPECT_LT(worst, 1e-5) << path;
  }
}

TEST(DeltaRule, BadArgumentsThrow) {
  const Inputs in(4, 8, 8, 9);
  std::vector<float> o, S;
  DeltaRuleIO io = in.io(o, S);
  EXPECT_THROW(delta_rule_chunked(io, 0), Error);
  io.dk = 0;
  EXPECT_THROW(delta_rule_recurrent(io), Error);
  io = in.io(o, S);
  io.S = nullptr;
  EXPECT_THROW(delta_rule_recurrent(io), Error);
  io = in.io(o, S);
  io.beta = nullptr;
  EXPECT_THROW(delta_rule_chunked(io, 64), Error);
  io = in.io(o, S);
  EXPECT_NO_THROW(delta_rule_chunked(io, 64));
}

}  // namespace
}  // namespace qinfer::ops

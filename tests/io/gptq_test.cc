// GPTQ unpacking, on the worked example of shared/spec/gptq.md §1.6, and
// pack/unpack round trips for v1/v2, asymmetric zeros and permuted g_idx.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "io/gptq.h"
#include "util/error.h"

namespace qinfer {
namespace {

namespace fs = std::filesystem;

template <typename T>
std::vector<uint8_t> raw(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

QuantConfig sym_config(int group, bool v2, bool desc_act = false) {
  QuantConfig q;
  q.enabled = true;
  q.method = "gptq";
  q.bits = 4;
  q.group_size = group;
  q.v2_zeros = v2;
  q.desc_act = desc_act;
  return q;
}

std::string write_module(const std::string& tag, const GptqPacked& p, int64_t K, int64_t N) {
  auto dir = fs::temp_directory_path() / ("qinfer_gptq_test_" + tag + std::to_string(::getpid()));
  fs::create_directories(dir);
  SafetensorsWriter w;
  w.add("m.qweight", DType::I32, {K / 8, N}, raw(p.qweight));
  w.add("m.qzeros", DType::I32, {p.num_groups, N / 8}, raw(p.qzeros));
  w.add("m.scales", DType::F16, {p.num_groups, N}, raw(p.scales_f16));
  w.add("m.g_idx", DType::I32, {K}, raw(p.g_idx));
  w.write((dir / "model.safetensors").string());
  return dir.string();
}

TEST(Gptq, WorkedExampleFromSpec) {
  // K = 8, N = 8, G = 4, sym, v1 (shared/spec/gptq.md §1.6).
  std::vector<int32_t> qweight = {1661839169, -1202520938, 229065195, 1392285232,
                                  -1488852091, -57265958, 1105954095, -1775183244};
  std::vector<int32_t> qzeros = {2004318071, 2004318071};
  std::vector<uint16_t> scales = {0x3000, 0x3400, 0x3600, 0x3800, 0x3900, 0x3A00, 0x3B00, 0x3C00};
  for (int n = 0; n < 8; ++n) scales.push_back(f32_to_f16(0.0625f * (n + 1)));
  std::vector<int32_t> g_idx = {0, 0, 0, 0, 1, 1, 1, 1};
  auto dir = fs::temp_directory_path() / ("qinfer_gptq_spec_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  SafetensorsWriter w;
  w.add("m.qweight", DType::I32, {1, 8}, raw(qweight));
  w.add("m.qzeros", DType::I32, {2, 1}, raw(qzeros));
  w.add("m.scales", DType::F16, {2, 8}, raw(scales));
  w.add("m.g_idx", DType::I32, {8}, raw(g_idx));
  w.write((dir / "model.safetensors").string());
  auto ck = Checkpoint::open(dir.string());
  GptqLinear lin = load_gptq(*ck, sym_config(4, false), "m", 8, 8);
  for (int k = 0; k < 8; ++k)
    for (int n = 0; n < 8; ++n) EXPECT_EQ(lin.q[n * 8 + k], (3 * k + 5 * n + 1) % 16) << k << "," << n;
  // w is indexed [n][k] (Linear layout); the spec prints w[k][n].
  const float row0[8] = {-0.875f, -0.5f, 1.125f, -4.0f, -1.875f, 1.5f, 6.125f, -4.0f};
  const float row7[8] = {-0.125f, 0.375f, -1.5f, -0.75f, 0.625f, 2.625f, -1.75f, 0.5f};
  for (int n = 0; n < 8; ++n) {
    EXPECT_EQ(lin.weight(n, 0), row0[n]) << n;
    EXPECT_EQ(lin.weight(n, 7), row7[n]) << n;
  }
  EXPECT_TRUE(lin.g_idx.empty());
  // The same zeros read as v2 are one lower.
  GptqLinear v2 = load_gptq(*ck, sym_config(4, true), "m", 8, 8);
  EXPECT_EQ(v2.zero[0], 7);
  EXPECT_EQ(lin.zero[0], 8);
  // Shape checks name the tensor.
  try {
    load_gptq(*ck, sym_config(4, false), "m", 16, 8);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("m.qweight"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_gptq(*ck, sym_config(3, false), "m", 8, 8), Error);  // 3 does not divide 8
}

TEST(Gptq, RoundTripAsymV1V2AndDescAct) {
  std::mt19937 rng(7);
  const int64_t K = 64, N = 24;
  for (int gs : {16, 32, 64}) {
    for (bool v2 : {false, true}) {
      for (bool perm : {false, true}) {
        if (perm && gs == K) continue;  // one group: every g_idx is trivial
        GptqLinear w;
        w.rows = N; w.cols = K; w.group_size = gs; w.num_groups = K / gs;
        w.q.resize(N * K); w.scale.resize(N * w.num_groups); w.zero.resize(N * w.num_groups);
        for (auto& q : w.q) q = rng() % 16;
        for (auto& z : w.zero) z = rng() % 16;   // includes 0, which v1 stores by borrowing
        for (auto& s : w.scale) s = f16_to_f32(f32_to_f16(0.01f * (1 + rng() % 100)));
        if (perm) {
          w.g_idx.resize(K);
          for (int64_t k = 0; k < K; ++k) w.g_idx[k] = static_cast<int32_t>((k * 7) % w.num_groups);
        }
        GptqPacked p = pack_gptq(w, v2);
        std::string tag = std::to_string(gs) + (v2 ? "v2" : "v1") + (perm ? "p" : "");
        auto ck = Checkpoint::open(write_module(tag, p, K, N));
        GptqLinear r = load_gptq(*ck, sym_config(gs, v2, perm), "m", N, K);
        EXPECT_EQ(r.q, w.q) << tag;
        EXPECT_EQ(r.zero, w.zero) << tag;
        EXPECT_EQ(r.scale, w.scale) << tag;
        EXPECT_EQ(r.g_idx, w.g_idx) << tag;
        if (perm && gs < K) {
          EXPECT_THROW(load_gptq(*ck, sym_config(gs, v2, false), "m", N, K), Error) << tag;
        }
      }
    }
  }
}

}  // namespace
}  // namespace qinfer

namespace qinfer {
namespace {

// A valid safetensors file may put a tensor at any byte offset: a one-byte tensor first
// leaves every GPTQ tensor misaligned (UBSan flagged the old uint16_t/int32_t loads).
// A NaN scale is refused naming the file and the tensor.
TEST(Gptq, UnalignedTensorsAndNanScales) {
  const int64_t K = 32, N = 8;
  GptqLinear w;
  w.rows = N; w.cols = K; w.group_size = 16; w.num_groups = 2;
  w.q.resize(N * K); w.scale.resize(N * 2); w.zero.resize(N * 2);
  for (size_t i = 0; i < w.q.size(); ++i) w.q[i] = static_cast<uint8_t>((i * 5) % 16);
  for (size_t i = 0; i < w.zero.size(); ++i) w.zero[i] = static_cast<uint8_t>(i % 16);
  for (size_t i = 0; i < w.scale.size(); ++i) w.scale[i] = 0.125f * static_cast<float>(i + 1);
  w.g_idx.resize(K);
  for (int64_t k = 0; k < K; ++k) w.g_idx[k] = static_cast<int32_t>((k * 3) % 2);
  GptqPacked p = pack_gptq(w, false);
  for (bool nan : {false, true}) {
    auto dir = fs::temp_directory_path() / ("qinfer_gptq_unaligned_" + std::to_string(nan) + std::to_string(::getpid()));
    fs::create_directories(dir);
    SafetensorsWriter sw;
    sw.add("a.pad", DType::U8, {1}, {7});  // sorts first: every later tensor starts at an odd offset
    sw.add("m.qweight", DType::I32, {K / 8, N}, raw(p.qweight));
    sw.add("m.qzeros", DType::I32, {2, N / 8}, raw(p.qzeros));
    std::vector<uint16_t> sc = p.scales_f16;
    if (nan) sc[3] = 0x7E00;
    sw.add("m.scales", DType::F16, {2, N}, raw(sc));
    sw.add("m.g_idx", DType::I32, {K}, raw(p.g_idx));
    sw.write((dir / "model.safetensors").string());
    auto ck = Checkpoint::open(dir.string());
    ASSERT_EQ(reinterpret_cast<uintptr_t>(ck->get("m.scales").data) % 2, 1u);
    if (!nan) {
      GptqLinear r = load_gptq(*ck, sym_config(16, false, true), "m", N, K);
      EXPECT_EQ(r.q, w.q);
      EXPECT_EQ(r.scale, w.scale);
      EXPECT_EQ(r.g_idx, w.g_idx);
    } else {
      try {
        load_gptq(*ck, sym_config(16, false, true), "m", N, K);
        ADD_FAILURE();
      } catch (const Error& e) {
        std::string m = e.what();
        EXPECT_NE(m.find((dir / "model.safetensors").string() + ": tensor m.scales: element 3 is not finite"),
                  std::string::npos) << m;
      }
    }
    fs::remove_all(dir);
  }
}

}  // namespace
}  // namespace qinfer

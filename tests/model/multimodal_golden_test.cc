// End to end on tests/fixtures/multimodal (mm-s1, mm-s1-small): PNG -> preprocess ->
// tower -> placeholder expansion -> mRoPE -> prefill logits and 16 greedy decode
// steps with rope_delta, against the goldens (FORMAT.md there). Also the text side
// alone fed the golden image embeddings, and chunked prefill with images.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "golden.h"
#include "util/error.h"
#include "vision/image_decode.h"
#include "vision/mm_prompt.h"
#include "vision/preprocess.h"
#include "vision/vision_tower.h"

namespace qinfer::test {
namespace {

std::string mm_dir(const std::string& name) { return std::string(QINFER_FIXTURES_DIR) + "/multimodal/" + name; }

struct MmCase {
  std::string folder;
  int prompt;
};

struct Prepared {
  vision::MmPrompt mm;
  std::vector<float> embeds;       // tower output, all images
  std::vector<const float*> rows;  // per expanded token
};

Prepared prepare(Model& m, const std::string& dir, const nlohmann::json& p, const std::vector<float>* golden_embeds) {
  Prepared r;
  const vision::ProcessorConfig pc = vision::load_processor_config(dir);
  std::vector<vision::ImagePatches> patches;
  std::vector<vision::ImageGrid> grids;
  for (const auto& f : p["image_files"]) {
    patches.push_back(vision::preprocess_image(vision::load_image_file(dir + "/" + f.get<std::string>()), pc));
    grids.push_back({patches.back().grid_t, patches.back().grid_h, patches.back().grid_w});
  }
  r.mm = vision::expand_image_prompt(p["input_ids"].get<std::vector<int>>(), grids, m.config().image_token_id, 2);
  if (golden_embeds) {
    r.embeds = *golden_embeds;
  } else if (!patches.empty()) {
    std::vector<const vision::ImagePatches*> ptrs;
    for (auto& x : patches) ptrs.push_back(&x);
    r.embeds = m.encode_images(ptrs);
  }
  const int64_t H = m.config().text.hidden_size;
  r.rows.assign(r.mm.ids.size(), nullptr);
  int64_t k = 0;
  for (auto [b, e] : r.mm.image_ranges)
    for (int64_t t = b; t < e; ++t) r.rows[t] = r.embeds.data() + (k++) * H;
  EXPECT_EQ(k * H, static_cast<int64_t>(r.embeds.size()));
  return r;
}

class MultimodalGolden : public ::testing::TestWithParam<MmCase> {};

void run_case(const MmCase& c, bool golden_embeds, int64_t chunk) {
  const std::string dir = mm_dir(c.folder);
  Model& m = cached_model(dir);
  ASSERT_NE(m.vision(), nullptr);
  Golden g(dir);
  std::ifstream jf(dir + "/golden.json");
  const auto gj = nlohmann::json::parse(jf);
  const auto& p = gj["prompts"][c.prompt];
  const std::string pre = "p" + std::to_string(c.prompt) + ".";
  const int64_t V = m.config().text.vocab_size;
  const int n_img = static_cast<int>(p["image_files"].size());
  std::vector<float> gemb;
  for (int i = 0; i < n_img; ++i) {
    auto e = g.f32(pre + "image_embeds." + std::to_string(i));
    gemb.insert(gemb.end(), e.begin(), e.end());
  }
  Prepared r = prepare(m, dir, p, golden_embeds ? &gemb : nullptr);
  EXPECT_EQ(r.mm.ids, g.i32(pre + "expanded_input_ids"));
  const int64_t L = static_cast<int64_t>(r.mm.ids.size());
  auto gpos = g.i32(pre + "position_ids");
  for (int64_t t = 0; t < L; ++t)
    for (int k = 0; k < 3; ++k) ASSERT_EQ(r.mm.positions[t * 3 + k], gpos[k * L + t]) << t;
  EXPECT_EQ(r.mm.rope_delta, g.i32(pre + "rope_delta")[0]);
  if (!golden_embeds && n_img) {
    Diff d = compare(r.embeds.data(), gemb.data(), gemb.size());
    EXPECT_LE(d.max_abs, 1e-4) << "image embeddings";
  }
  // Prefill (in chunks of `chunk` tokens), every row's logits.
  auto state = m.new_sequence();
  std::vector<float> logits(L * V);
  for (int64_t off = 0; off < L; off += chunk) {
    Model::Step st;
    st.state = state.get();
    st.tokens = r.mm.ids.data() + off;
    st.n_tokens = std::min(chunk, L - off);
    st.logits = logits.data() + off * V;
    st.all_logits = true;
    st.embed_rows = r.rows.data() + off;
    st.mrope_pos = r.mm.positions.data() + off * 3;
    m.forward({st});
  }
  auto want = g.f32(pre + "logits");
  // Image rows move ~10x more with tiny embedding differences (FORMAT.md): 5e-3 there
  // end to end, 1e-3 on text rows, 1e-3 everywhere when fed the golden embeddings.
  double text_max = 0, img_max = 0;
  std::vector<char> is_img(L, 0);
  for (auto [b, e] : r.mm.image_ranges)
    for (int64_t t = b; t < e; ++t) is_img[t] = 1;
  for (int64_t t = 0; t < L; ++t) {
    Diff d = compare(logits.data() + t * V, want.data() + t * V, V);
    (is_img[t] ? img_max : text_max) = std::max(is_img[t] ? img_max : text_max, d.max_abs);
  }
  EXPECT_LE(text_max, 1e-3) << "text rows";
  EXPECT_LE(img_max, golden_embeds ? 1e-3 : 5e-3) << "image rows";
  // Greedy decode with rope_delta.
  auto greedy = g.i32(pre + "greedy_tokens");
  auto dlog = g.f32(pre + "decode_logits");
  int tok = argmax(logits.data() + (L - 1) * V, V);
  EXPECT_EQ(tok, greedy[0]);
  double dec_max = 0;
  std::vector<float> row(V);
  for (int j = 0; j < 16; ++j) {
    Model::Step st;
    st.state = state.get();
    st.tokens = &greedy[j];   // the golden's own token (a mismatch is reported, not compounded)
    st.n_tokens = 1;
    st.logits = row.data();
    st.rope_delta = r.mm.rope_delta;
    m.forward({st});
    dec_max = std::max(dec_max, compare(row.data(), dlog.data() + j * V, V).max_abs);
    const int next = argmax(row.data(), V);
    if (j + 1 < 16) EXPECT_EQ(next, greedy[j + 1]) << "decode step " << j;
    else EXPECT_EQ(next, p["token_after_greedy"].get<int>());
  }
  EXPECT_LE(dec_max, 1e-3) << "decode logits";
}

// End to end on every kernel path this CPU has (scalar, AVX2, AVX-512): the tower, the
// merger and the text model each dispatch through ops/.
TEST_P(MultimodalGolden, EndToEnd) {
  for (const std::string& path : kernel_paths()) {
    SCOPED_TRACE("kernel path " + path);
    KernelPathGuard guard(path);
    run_case(GetParam(), false, 1 << 20);
  }
}
TEST_P(MultimodalGolden, TextSideWithGoldenEmbeddings) { run_case(GetParam(), true, 1 << 20); }
TEST_P(MultimodalGolden, ChunkedPrefill) { run_case(GetParam(), false, 37); }

std::vector<MmCase> cases() {
  std::vector<MmCase> out;
  for (const char* f : {"mm-s1", "mm-s1-small"})
    for (int p = 0; p < 5; ++p) out.push_back({f, p});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, MultimodalGolden, ::testing::ValuesIn(cases()), [](const auto& i) {
  std::string n = i.param.folder + "_p" + std::to_string(i.param.prompt);
  for (char& ch : n) if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
});

TEST(MultimodalLoad, TextOnlySkipsTheTower) {
  LoadOptions o;
  o.threads = 2;
  o.load_vision = false;
  auto m = Model::load(mm_dir("mm-s1-small"), o);
  EXPECT_EQ(m->vision(), nullptr);
  EXPECT_THROW(m->encode_images({}), Error);
  EXPECT_GT(cached_model(mm_dir("mm-s1-small")).weight_bytes(), m->weight_bytes());
}

}  // namespace
}  // namespace qinfer::test

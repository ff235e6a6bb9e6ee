#include "cli/bench_image.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cli/generation_flags.h"
#include "io/checkpoint.h"
#include "io/config.h"
#include "ops/matmul.h"
#include "util/error.h"
#include "util/log.h"
#include "util/thread_pool.h"
#include "vision/preprocess.h"
#include "vision/vision_tower.h"

namespace qinfer::cli {

namespace {

// A deterministic S x S test picture: smooth gradients plus noise (the tower's
// cost does not depend on the pixels; the resize and normalize see real work).
vision::RgbImage synthetic_image(int64_t side, uint32_t seed) {
  vision::RgbImage img;
  img.height = img.width = side;
  img.rgb.resize(static_cast<size_t>(side * side * 3));
  std::mt19937 rng(seed);
  for (int64_t y = 0; y < side; ++y)
    for (int64_t x = 0; x < side; ++x)
      for (int c = 0; c < 3; ++c)
        img.rgb[static_cast<size_t>((y * side + x) * 3 + c)] =
            static_cast<uint8_t>((x * (c + 1) + y * (3 - c)) / 8 + (rng() & 31));
  return img;
}

struct Rate {
  double flop = 0, seconds = 0;
  double gflops() const { return seconds > 0 ? flop / seconds / 1e9 : 0; }
};

// Best of `rounds` timings of Y = X Wᵀ with n rows (X random, fixed per call).
Rate time_matmul(const ops::DenseMatrix& W, int64_t n, int rounds) {
  std::vector<float> x(static_cast<size_t>(n * W.cols)), y(static_cast<size_t>(n * W.rows));
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& v : x) v = u(rng);
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    const double t0 = now_seconds();
    ops::matmul(W, x.data(), n, y.data());
    best = std::min(best, now_seconds() - t0);
  }
  return {2.0 * static_cast<double>(n) * W.rows * W.cols, best};
}

}  // namespace

int bench_image(const Args& a) {
  const int64_t side = a.get_int("image-size", 1024);
  const int64_t count = a.get_int("images", 1);
  if (side < 1 || side > 16384) fail("--image-size must be 1..16384 pixels, got ", side);
  if (count < 1 || count > 64) fail("--images must be 1..64, got ", count);
  const int64_t threads = a.get_int("threads", 0);
  if (threads > 0) ThreadPool::set_global_threads(static_cast<int>(threads));
  const std::string dir = model_dir_from_args(a);
  const ModelConfig mc = load_config(dir);
  if (!mc.has_vision)
    fail(dir, "/config.json has no vision_config: --image-size needs a checkpoint with a vision tower "
              "(qinfer synth --vision writes one)");
  const vision::VisionConfig vc = vision::parse_vision_config(mc.raw["vision_config"], dir + "/config.json");
  const vision::ProcessorConfig pc = vision::load_processor_config(dir);
  auto ck = Checkpoint::open(dir);
  const double t_load = now_seconds();
  auto tower = vision::VisionTower::load(vc, ck->all());
  std::printf("machine      %d threads, kernels %s\n", ThreadPool::global().size(), ops::kernel_path());
  std::printf("tower        %s: %d blocks, hidden %d, %d heads (head_dim %d), MLP %d, %.2f GB of weights "
              "(%lld tensors, bound in %.2f s)\n",
              dir.c_str(), vc.depth, vc.hidden_size, vc.num_heads, vc.head_dim(), vc.intermediate_size,
              tower->weight_bytes() / 1e9, static_cast<long long>(tower->tensor_count()), now_seconds() - t_load);

  // Preprocessing (smart_resize, antialiased bicubic, normalize, patchify), per image.
  std::vector<vision::ImagePatches> imgs;
  const double t_pre = now_seconds();
  for (int64_t i = 0; i < count; ++i)
    imgs.push_back(vision::preprocess_image(synthetic_image(side, static_cast<uint32_t>(i + 1)), pc, "bench image"));
  const double pre_s = now_seconds() - t_pre;
  std::vector<const vision::ImagePatches*> ptrs;
  int64_t patches = 0, merged = 0;
  for (const auto& im : imgs) {
    ptrs.push_back(&im);
    patches += im.patches();
    merged += im.merged_tokens(vc.spatial_merge_size);
  }
  std::printf("image        %lld x %lldx%lld RGB -> resized %lldx%lld, grid %lldx%lld: %lld patches, %lld merged "
              "tokens; preprocessing %.3f s (%.3f s an image)\n",
              static_cast<long long>(count), static_cast<long long>(side), static_cast<long long>(side),
              static_cast<long long>(imgs[0].resized_h), static_cast<long long>(imgs[0].resized_w),
              static_cast<long long>(imgs[0].grid_h), static_cast<long long>(imgs[0].grid_w),
              static_cast<long long>(patches), static_cast<long long>(merged), pre_s, pre_s / count);
  std::fflush(stdout);

  // Warm-up: the smallest image the processor allows runs through every weight
  // (page faults of the mapped checkpoint, the kernel probe, the threads).
  {
    vision::RgbImage small = synthetic_image(std::max<int64_t>(pc.factor(), 64), 99);
    vision::ImagePatches sp = vision::preprocess_image(small, pc, "warm-up image");
    const double t0 = now_seconds();
    tower->forward({&sp});
    std::printf("warm-up      %lld patches: %.2f s (page faults, kernel probe; not counted)\n",
                static_cast<long long>(sp.patches()), now_seconds() - t0);
  }

  // The GEMM rate of the same kernels on the tower's own matrices (block 0):
  // at the tower's row count (one product over all patches) and at 512 rows
  // (a text prefill pass, Model::kMaxCallTokens).
  const char* names[] = {"qkv", "proj", "fc1", "fc2"};
  const std::vector<const ops::DenseMatrix*> mats = tower->block_matrices();
  Rate at_n, at_512;
  std::string per_matrix;
  for (size_t i = 0; i < mats.size(); ++i) {
    const Rate r512 = time_matmul(*mats[i], 512, 3);
    const Rate rn = time_matmul(*mats[i], patches, 1);
    at_512.flop += r512.flop, at_512.seconds += r512.seconds;
    at_n.flop += rn.flop, at_n.seconds += rn.seconds;
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s%s %lldx%lld %.1f / %.1f", i ? ", " : "", names[i],
                  static_cast<long long>(mats[i]->rows), static_cast<long long>(mats[i]->cols), r512.gflops(),
                  rn.gflops());
    per_matrix += buf;
  }
  std::printf("gemm         ops::matmul %s on the tower's matrices: %.1f GFLOP/s at 512 rows, %.1f GFLOP/s at "
              "%lld rows (%s GFLOP/s)\n",
              ops::wtype_name(mats[0]->type), at_512.gflops(), at_n.gflops(), static_cast<long long>(patches),
              per_matrix.c_str());
  std::fflush(stdout);

  // The measured pass.
  vision::VisionTimes tm;
  tower->forward(ptrs, nullptr, &tm);
  const vision::VisionFlops f = tower->flops(ptrs);
  auto line = [](const char* what, double s, double flop, double total_s) {
    if (flop > 0)
      std::printf("tower        %-10s %8.3f s %5.1f%%  %8.1f GFLOP  %7.1f GFLOP/s\n", what, s, 100.0 * s / total_s,
                  flop / 1e9, flop / s / 1e9);
    else
      std::printf("tower        %-10s %8.3f s %5.1f%%\n", what, s, 100.0 * s / total_s);
  };
  line("embed", tm.embed, f.embed, tm.total);
  line("norms", tm.norms, 0, tm.total);
  line("qkv", tm.qkv, f.qkv, tm.total);
  line("rope", tm.rope, 0, tm.total);
  line("attention", tm.attention, f.attention, tm.total);
  line("proj", tm.proj, f.proj, tm.total);
  line("fc1", tm.fc1, f.fc1, tm.total);
  line("gelu", tm.gelu, 0, tm.total);
  line("fc2", tm.fc2, f.fc2, tm.total);
  line("merger", tm.merger, f.merger, tm.total);
  const double rate = f.total() / tm.total / 1e9, ref = std::max(at_512.gflops(), at_n.gflops());
  std::printf("tower        total %.2f s for %lld image(s) (%d blocks %.2f s): %.1f GFLOP, %.1f GFLOP/s = %.1f%% of "
              "the GEMM rate %.1f GFLOP/s (the better of the two above; target 70%%)\n",
              tm.total, static_cast<long long>(count), vc.depth, tm.blocks(), f.total() / 1e9, rate,
              100.0 * rate / ref, ref);
  return 0;
}

}  // namespace qinfer::cli

// qinfer bench --model DIR --image-size S [--images K]: the vision tower alone
// (the text model is not loaded) on K synthetic S x S images in one batched
// pass: preprocessing time, the tower's time by stage (patch embedding, the
// blocks' parts, merger), its analytic FLOP count and GFLOP/s, against the
// rate of the same dense kernels (ops::matmul) measured in the same run on the
// tower's own matrices: at the tower's row count and at the text prefill's
// 512-row passes.
#pragma once
#include "util/args.h"

namespace qinfer::cli {

int bench_image(const Args& a);

}  // namespace qinfer::cli

// Delta rule entry points: argument checks, per-thread scratch, dispatch.
#include "ops/delta_rule.h"

#include <cstring>
#include <vector>

#include "ops/seq_kernel_table.h"
#include "util/error.h"

namespace qinfer::ops {
namespace {

void check(const DeltaRuleIO& io, const char* what) {
  if (io.T < 0) fail(what, ": negative token count T = ", io.T);
  if (io.dk <= 0 || io.dv <= 0) fail(what, ": key dim ", io.dk, " and value dim ", io.dv, " must be positive");
  if (!io.S) fail(what, ": null state S");
  if (io.S_in && io.S_in != io.S && io.S_in < io.S + io.dk * io.dv && io.S < io.S_in + io.dk * io.dv)
    fail(what, ": the input state S_in overlaps the output state S");
  if (io.T > 0 && (!io.q || !io.k || !io.v || !io.g || !io.beta || !io.o))
    fail(what, ": null q, k, v, g, beta or o");
}

float* scratch(int64_t n) {
  thread_local std::vector<float> buf;
  if (static_cast<int64_t>(buf.size()) < n) buf.resize(n);
  return buf.data();
}

}  // namespace

void delta_rule_recurrent(const DeltaRuleIO& io) {
  check(io, "delta_rule_recurrent");
  detail::seq_kernels().delta_recurrent(io, scratch(detail::delta_work_floats(io.dk, io.dv, 0)));
}

void delta_rule_chunked(const DeltaRuleIO& io, int64_t C) {
  check(io, "delta_rule_chunked");
  if (C < 1) fail("delta_rule_chunked: chunk size ", C, " must be at least 1");
  if (io.S_in && io.S_in != io.S) std::memcpy(io.S, io.S_in, static_cast<size_t>(io.dk * io.dv) * sizeof(float));
  detail::seq_kernels().delta_chunked(io, C, scratch(detail::delta_work_floats(io.dk, io.dv, C)));
}

}  // namespace qinfer::ops

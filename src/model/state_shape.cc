// The per-sequence cache shapes of a text model (one place for model.cc and the quantizer).
#include "model/layers.h"

namespace qinfer::model {

StateShape text_state_shape(const TextConfig& tc, bool mtp) {
  StateShape s;
  s.num_full_layers = tc.num_full_layers();
  s.num_linear_layers = tc.num_hidden_layers - s.num_full_layers;
  s.num_mtp_layers = mtp ? 1 : 0;
  s.kv_width = static_cast<int64_t>(tc.num_key_value_heads) * tc.head_dim;
  s.kv_heads = tc.num_key_value_heads;
  s.conv_rows = tc.linear_conv_kernel_dim - 1;
  s.conv_dim = 2LL * tc.linear_num_key_heads * tc.linear_key_head_dim +
               static_cast<int64_t>(tc.linear_num_value_heads) * tc.linear_value_head_dim;
  s.ssm_size = static_cast<int64_t>(tc.linear_num_value_heads) * tc.linear_key_head_dim * tc.linear_value_head_dim;
  s.key_heads = tc.linear_num_key_heads;
  s.value_heads = tc.linear_num_value_heads;
  s.key_dim = tc.linear_key_head_dim;
  s.value_dim = tc.linear_value_head_dim;
  return s;
}

}  // namespace qinfer::model

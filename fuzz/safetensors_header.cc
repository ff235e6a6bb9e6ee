// safetensors files: the 8-byte header length, the JSON header (dtypes, shapes, offsets,
// __metadata__) and the data section, opened and validated by io::SafetensorsFile; every
// tensor's bytes are then read through the file, as the weight loader does.
#include <vector>

#include "fuzz_util.h"
#include "io/safetensors.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = qinfer::fuzz::write_scratch("model.safetensors", qinfer::fuzz::as_text(data, size));
  try {
    qinfer::SafetensorsFile f(path);
    std::vector<uint8_t> buf;
    for (const auto& t : f.tensors()) {
      (void)t.shape_str();
      const int64_t n = t.numel();
      if (t.nbytes > (1u << 20)) continue;
      buf.resize(t.nbytes);
      if (n > 0 && t.nbytes > 0) t.read_bytes(0, t.nbytes, buf.data());
      volatile uint8_t sum = 0;  // the mapped bytes must lie inside the file
      for (size_t i = 0; i < t.nbytes; ++i) sum = sum + t.data[i];
    }
  } catch (const qinfer::Error&) {
  }
  return 0;
}

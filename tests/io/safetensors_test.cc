// Safetensors reading: round trip through the writer, and every kind of bad
// file gives an Error naming the file and the tensor.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "util/error.h"

namespace qinfer {
namespace {

namespace fs = std::filesystem;

std::string temp_dir() {
  auto d = fs::temp_directory_path() / ("qinfer_io_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::create_directories(d);
  return d.string();
}

std::vector<uint8_t> bytes_of(std::vector<float> v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Writes a raw file: 8-byte header length, header text, then `data_bytes` zero bytes.
std::string write_raw(const std::string& dir, const std::string& header, size_t data_bytes) {
  std::string path = dir + "/model.safetensors";
  std::ofstream f(path, std::ios::binary);
  uint64_t n = header.size();
  f.write(reinterpret_cast<const char*>(&n), 8);
  f << header;
  std::string zeros(data_bytes, '\0');
  f << zeros;
  return path;
}

std::string error_of(const std::string& path) {
  try {
    SafetensorsFile f(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Safetensors, RoundTrip) {
  std::string dir = temp_dir();
  SafetensorsWriter w;
  w.add("a.weight", DType::F32, {2, 3}, bytes_of({1, 2, 3, 4, 5, 6}));
  w.add("b", DType::BF16, {1}, {0x80, 0x3f});
  w.add_metadata("format", "pt");
  w.write(dir + "/model.safetensors");
  SafetensorsFile f(dir + "/model.safetensors");
  ASSERT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  auto ck = Checkpoint::open(dir);
  const TensorInfo& a = ck->get("a.weight");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(reinterpret_cast<const float*>(a.data)[5], 6.0f);
  EXPECT_EQ(bf16_to_f32(*reinterpret_cast<const uint16_t*>(ck->get("b").data)), 1.0f);
  EXPECT_THROW(a.expect_shape({3, 2}), Error);
  try {
    ck->get("missing.weight");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.weight"), std::string::npos);
  }
}

TEST(Safetensors, TruncatedFile) {
  std::string dir = temp_dir();
  SafetensorsWriter w;
  w.add("x", DType::F32, {4}, bytes_of({1, 2, 3, 4}));
  w.write(dir + "/model.safetensors");
  fs::resize_file(dir + "/model.safetensors", fs::file_size(dir + "/model.safetensors") - 4);
  std::string err = error_of(dir + "/model.safetensors");
  EXPECT_NE(err.find("model.safetensors"), std::string::npos) << err;
  EXPECT_NE(err.find("tensor x"), std::string::npos) << err;
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;
  fs::resize_file(dir + "/model.safetensors", 5);
  EXPECT_NE(error_of(dir + "/model.safetensors").find("truncated"), std::string::npos);
}

// read_bytes reads through the file, not the mapping: same bytes as the mapping,
// an Error naming the tensor for a range outside it, and an Error naming the
// file (not a SIGBUS, as touching the mapping would give) when the file was
// truncated after it was opened.
TEST(Safetensors, ReadBytesFromFile) {
  std::string dir = temp_dir();
  SafetensorsWriter w;
  w.add("a", DType::F32, {3}, bytes_of({1, 2, 3}));
  w.add("emb", DType::F32, {4, 2}, bytes_of({10, 11, 20, 21, 30, 31, 40, 41}));
  const std::string path = dir + "/model.safetensors";
  w.write(path);
  SafetensorsFile f(path);
  const TensorInfo* emb = nullptr;
  for (const auto& t : f.tensors())
    if (t.name == "emb") emb = &t;
  ASSERT_NE(emb, nullptr);
  float row[2];
  emb->read_bytes(2 * 8, 8, row);   // row 2
  EXPECT_EQ(row[0], 30.0f);
  EXPECT_EQ(row[1], 31.0f);
  EXPECT_EQ(std::memcmp(row, emb->data + 16, 8), 0);
  try {
    emb->read_bytes(3 * 8, 16, row);
    FAIL() << "read past the tensor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor emb"), std::string::npos) << e.what();
  }
  fs::resize_file(path, fs::file_size(path) - 12);
  try {
    emb->read_bytes(3 * 8, 8, row);
    FAIL() << "read from a truncated file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.safetensors"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tensor emb"), std::string::npos) << e.what();
  }
}

TEST(Safetensors, BadHeaders) {
  std::string dir = temp_dir();
  struct Case { std::string header; size_t data; std::string expect; };
  std::vector<Case> cases = {
      {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", 8, "run past the end"},
      {R"({"w":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", 8, "unknown dtype"},
      {R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8, "needs 12 bytes"},
      {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8, "reversed"},
      {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"v":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 16, "overlap"},
      {R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8, "bad shape"},
      {R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", 8, "needs dtype, shape and data_offsets"},
      {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8])", 8, "malformed"},
      // 10k levels in the header used to be parsed then walked recursively.
      {"{\"w\":" + std::string(10000, '[') + std::string(10000, ']') + "}", 8, "JSON nested deeper than 256 levels at w"},
      {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"__metadata__":{"a":)" + std::string(300, '[') +
           std::string(300, ']') + "}}", 8, "nested deeper than 256 levels at __metadata__.a"},
  };
  for (const auto& c : cases) {
    std::string err = error_of(write_raw(dir, c.header, c.data));
    EXPECT_NE(err.find(c.expect), std::string::npos) << c.header << " -> " << err;
    EXPECT_NE(err.find("model.safetensors"), std::string::npos) << err;
  }
  // A header length larger than the file.
  std::string path = dir + "/model.safetensors";
  {
    std::ofstream f(path, std::ios::binary);
    uint64_t n = 1000;
    f.write(reinterpret_cast<const char*>(&n), 8);
    f << "{}";
  }
  EXPECT_NE(error_of(path).find("header length"), std::string::npos);
}

TEST(Checkpoint, ShardedIndex) {
  std::string dir = std::string(QINFER_FIXTURES_DIR) + "/text/qwen35moe-tiny-s2/gptq";
  auto ck = Checkpoint::open(dir);
  EXPECT_EQ(ck->files().size(), 3u);
  EXPECT_TRUE(ck->has("lm_head.weight"));
  EXPECT_GT(ck->all().size(), 100u);
}

TEST(Checkpoint, MissingShardAndFolder) {
  EXPECT_THROW(Checkpoint::open("/nonexistent/qinfer"), Error);
  std::string dir = temp_dir();
  std::ofstream(dir + "/model.safetensors.index.json") << R"({"weight_map":{"a":"model-00001-of-00002.safetensors"}})";
  try {
    Checkpoint::open(dir);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model-00001-of-00002.safetensors"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qinfer

namespace qinfer {
namespace {

TEST(Safetensors, FifoOrDeviceInPlaceOfAWeightFile) {
  std::string dir = testing::TempDir() + "/st_fifo";
  std::filesystem::create_directories(dir);
  std::string path = dir + "/model.safetensors";
  std::filesystem::remove(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  // open() of a FIFO with no writer blocked forever: now refused at once.
  try {
    SafetensorsFile f(path);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": not a regular file"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
  EXPECT_THROW(SafetensorsFile("/dev/null"), Error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace qinfer

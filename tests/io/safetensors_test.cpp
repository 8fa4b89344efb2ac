#include "attn/io/safetensors.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "attn/random.h"
#include "test_support.h"

namespace attn::io {
namespace {

namespace fs = std::filesystem;
using Named = std::vector<std::pair<std::string, Tensor>>;

// A fresh directory per test, removed afterwards.
class Safetensors : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "attn_safetensors_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string file(const std::string& name) const { return (fs::path(dir_) / name).string(); }
  std::vector<std::string> listing() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string dir_;
};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string u64_le(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(v >> (8 * i));
  return s;
}

// A file from a raw header text and data buffer, as any writer could produce it.
std::string craft(const std::string& header, const std::string& buffer) {
  return u64_le(header.size()) + header + buffer;
}

std::string floats_le(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

Named sample_tensors() {
  Tensor big = testing::random_tensor({6, 3}, 1);
  return {
      {"encoder.weight", testing::random_tensor({2, 3}, 2)},
      {"ids", Tensor::from_vector(std::vector<int32_t>{7, -1, 0, 2147483647}, {4})},
      {"scalar", Tensor::scalar(2.5f)},
      {"empty", Tensor::zeros({0, 5})},
      {"view", big.slice(2, 4)},  // a view with a storage offset
  };
}

// The load must fail with IoError whose one-line message starts with the path and
// contains `expected`.
#define EXPECT_LOAD_FAILS(path, expected)                                               \
  do {                                                                                  \
    try {                                                                               \
      load_safetensors(path);                                                           \
      ADD_FAILURE() << "load of " << (path) << " did not fail; expected: " << expected; \
    } catch (const IoError& e) {                                                        \
      const std::string m = e.what();                                                   \
      EXPECT_EQ(m.rfind(std::string(path) + ": ", 0), 0u) << m;                         \
      EXPECT_NE(m.find(expected), std::string::npos) << "message: " << m;               \
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;                                  \
    }                                                                                   \
  } while (0)

TEST_F(Safetensors, RoundTripF32I32MetadataEmptyAndViews) {
  const Named in = sample_tensors();
  const std::map<std::string, std::string> meta = {{kAttnMetadataKey, R"({"model":"gru","vocab":["<pad>","a"]})"},
                                                   {"format", "pt"}};
  const std::string path = file("model.safetensors");
  save_safetensors(path, in, meta);
  EXPECT_EQ(listing(), std::vector<std::string>{"model.safetensors"});  // no temporary left

  const SafetensorsFile f = load_safetensors(path);
  EXPECT_EQ(f.path, path);
  EXPECT_EQ(f.metadata, meta);
  ASSERT_EQ(f.tensors.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(f.tensors[i].first, in[i].first);
    EXPECT_EQ(f.tensors[i].second.shape(), in[i].second.shape()) << in[i].first;
    EXPECT_EQ(f.tensors[i].second.dtype(), in[i].second.dtype()) << in[i].first;
  }
  EXPECT_EQ(f.at("encoder.weight").to_vector(), in[0].second.to_vector());
  EXPECT_EQ(f.at("ids").to_vector_i32(), (std::vector<int32_t>{7, -1, 0, 2147483647}));
  EXPECT_EQ(f.at("scalar").shape(), Shape{});
  EXPECT_EQ(f.at("scalar").item(), 2.5f);
  EXPECT_EQ(f.at("empty").shape(), (Shape{0, 5}));
  EXPECT_EQ(f.at("view").to_vector(), in[4].second.to_vector());
  EXPECT_EQ(f.find("nothing"), nullptr);
  EXPECT_THROW_MSG(f.at("nothing"), IoError, path + ": no tensor 'nothing'");
}

TEST_F(Safetensors, LayoutFollowsTheFormat) {
  const std::string path = file("layout.safetensors");
  save_safetensors(path,
                   {{"a", Tensor::from_vector(std::vector<float>{1.0f, -2.0f}, {2})},
                    {"b", Tensor::from_vector(std::vector<int32_t>{3}, {1, 1})}},
                   {{"k", "v"}});
  const std::string bytes = read_bytes(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  EXPECT_EQ((8 + n) % 8, 0u);  // header padded so the buffer is 8-byte aligned
  ASSERT_EQ(bytes.size(), 8 + n + 12);
  const auto header = nlohmann::json::parse(bytes.substr(8, n));
  EXPECT_EQ(header["__metadata__"]["k"], "v");
  EXPECT_EQ(header["a"]["dtype"], "F32");
  EXPECT_EQ(header["a"]["shape"], nlohmann::json::array({2}));
  EXPECT_EQ(header["a"]["data_offsets"], nlohmann::json::array({0, 8}));
  EXPECT_EQ(header["b"]["dtype"], "I32");
  EXPECT_EQ(header["b"]["data_offsets"], nlohmann::json::array({8, 12}));
  EXPECT_EQ(bytes.substr(8 + n), floats_le({1.0f, -2.0f}) + std::string("\x03\0\0\0", 4));
}

TEST_F(Safetensors, ReadsAForeignFile) {
  // Keys in another order, extra entry fields, no metadata, no padding, a hole-free buffer
  // whose tensors are stored in the reverse order of the header.
  const std::string header =
      R"({"w":{"dtype":"F32","shape":[2,1],"data_offsets":[4,12],"extra":1},"n":{"dtype":"I32","shape":[],"data_offsets":[0,4]}})";
  const std::string path = file("foreign.safetensors");
  write_bytes(path, craft(header, std::string("\x05\0\0\0", 4) + floats_le({0.5f, -8.0f})));
  const SafetensorsFile f = load_safetensors(path);
  ASSERT_EQ(f.tensors.size(), 2u);
  EXPECT_EQ(f.tensors[0].first, "w");  // header order
  EXPECT_EQ(f.at("w").to_vector(), (std::vector<float>{0.5f, -8.0f}));
  EXPECT_EQ(f.at("n").to_vector_i32(), std::vector<int32_t>{5});
  EXPECT_TRUE(f.metadata.empty());
  EXPECT_FALSE(f.verified) << "a file without checksums loads, marked unverified";
  // null metadata is accepted as none
  write_bytes(path, craft(R"({"__metadata__":null})", ""));
  EXPECT_TRUE(load_safetensors(path).tensors.empty());
}

// Issue 18 item 8: one flipped bit (a weight becoming 3e37) loaded and evaluated; trailing
// garbage and a gap before the data loaded although the format forbids both.
TEST_F(Safetensors, ChecksumsNameTheDamagedTensor) {
  const std::string path = file("ckpt.safetensors");
  save_safetensors(path, sample_tensors(), {{"k", "v"}});
  const SafetensorsFile good = load_safetensors(path);
  EXPECT_TRUE(good.verified);
  EXPECT_EQ(good.metadata, (std::map<std::string, std::string>{{"k", "v"}})) << "the checksum key is attn's own";
  EXPECT_TRUE(good.subset("encoder.").verified);
  std::string bytes = read_bytes(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  const auto header = nlohmann::json::parse(bytes.substr(8, n));
  const uint64_t begin = header["view"]["data_offsets"][0];
  bytes[8 + n + begin + 3] ^= 0x10;  // one bit of the first float's exponent
  write_bytes(path, bytes);
  EXPECT_LOAD_FAILS(path, "tensor 'view' is damaged: its bytes have CRC-32 ");
  // A checksum that names no tensor, or a tensor without one.
  EXPECT_THROW_MSG(save_safetensors(path, {{"a", Tensor::zeros({1})}}, {{kChecksumMetadataKey, "{}"}}), ValueError,
                   "metadata key 'attn.crc32' is attn's own");
  write_bytes(path,
              craft(R"({"__metadata__":{"attn.crc32":"{}"},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                    floats_le({1.0f})));
  EXPECT_LOAD_FAILS(path, "tensor 'a' has no checksum");
  write_bytes(
      path,
      craft(
          R"({"__metadata__":{"attn.crc32":"{\"a\":\"0\",\"b\":\"0\"}"},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
          floats_le({1.0f})));
  EXPECT_LOAD_FAILS(path, "a checksum names tensor 'b', which the file does not hold");
}

TEST_F(Safetensors, TrailingBytesAndGapsAreRefused) {
  const std::string path = file("f.safetensors");
  save_safetensors(path, {{"a", Tensor::full({2}, 1.0f)}});
  write_bytes(path, read_bytes(path) + "garbage!");
  EXPECT_LOAD_FAILS(path, "8 bytes after the last tensor (the safetensors format forbids trailing data");
  write_bytes(path, craft(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                          std::string(8, '\0') + floats_le({1.0f})));
  EXPECT_LOAD_FAILS(path, "a gap of 8 bytes before tensor 'a'");
  write_bytes(
      path,
      craft(
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
          floats_le({1.0f, 2.0f, 3.0f})));
  EXPECT_LOAD_FAILS(path, "a gap of 4 bytes before tensor 'b'");
}

// Issue 18 item 10: a FIFO given as a checkpoint blocked in open() for ever.
TEST_F(Safetensors, AFifoIsRefusedNotWaitedOn) {
  const std::string path = file("fifo");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  EXPECT_LOAD_FAILS(path, "not a regular file (a FIFO)");
}

TEST_F(Safetensors, OverwriteReplacesTheWholeFile) {
  const std::string path = file("ckpt.safetensors");
  save_safetensors(path, {{"a", Tensor::full({100}, 1.0f)}});
  save_safetensors(path, {{"b", Tensor::full({2}, 3.0f)}});
  const SafetensorsFile f = load_safetensors(path);
  ASSERT_EQ(f.tensors.size(), 1u);
  EXPECT_EQ(f.at("b").to_vector(), std::vector<float>(2, 3.0f));
  EXPECT_EQ(listing(), std::vector<std::string>{"ckpt.safetensors"});
}

TEST_F(Safetensors, TruncatedAtEveryPosition) {
  const std::string path = file("full.safetensors");
  save_safetensors(path, sample_tensors(), {{"attn", "{}"}});
  const std::string bytes = read_bytes(path);
  const std::string cut = file("cut.safetensors");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<unsigned char>(bytes[i]);
  for (size_t n = 0; n < bytes.size(); ++n) {
    write_bytes(cut, bytes.substr(0, n));
    // Cut in the length field, in the header (its length exceeds what follows), or in
    // the data (the last tensor runs past the end).
    const char* expected = n < 8                ? "too short for a safetensors header"
                           : n < 8 + header_len ? "exceeds"
                                                : "run past the end";
    SCOPED_TRACE("truncated to " + std::to_string(n) + " of " + std::to_string(bytes.size()) + " bytes");
    EXPECT_LOAD_FAILS(cut, expected);
  }
}

TEST_F(Safetensors, HeaderLengthTooBig) {
  const std::string path = file("len.safetensors");
  write_bytes(path, u64_le(~uint64_t{0}) + "{}");
  EXPECT_LOAD_FAILS(path, "header length 18446744073709551615 is larger than the limit of 100000000 bytes");
  write_bytes(path, u64_le(3) + "{}");
  EXPECT_LOAD_FAILS(path, "header length 3 exceeds the 2 bytes after the length field (truncated file?)");
  write_bytes(path, u64_le(0) + "{}");
  EXPECT_LOAD_FAILS(path, "header length 0 is too small");
  write_bytes(path, "abc");
  EXPECT_LOAD_FAILS(path, "file is 3 bytes, too short for a safetensors header (needs at least 8)");
}

TEST_F(Safetensors, GarbageHeaders) {
  const std::string path = file("bad.safetensors");
  write_bytes(path, craft("{not json", ""));
  EXPECT_LOAD_FAILS(path,
                    "header is not valid JSON: parse error at line 1, column 3: syntax error while parsing object key");
  write_bytes(path, craft("[1, 2]", ""));
  EXPECT_LOAD_FAILS(path, "header is not a JSON object");
  write_bytes(path, craft("{\"a\":\n\x01\xff}", ""));
  EXPECT_LOAD_FAILS(path, "header is not valid JSON");
  write_bytes(path, craft(std::string(1000, '[') + std::string(1000, ']'), ""));
  EXPECT_LOAD_FAILS(path, "header nests deeper than 64 levels");
  write_bytes(path, craft(R"({"w":5})", ""));
  EXPECT_LOAD_FAILS(path, "tensor 'w': header entry must be a JSON object, got 5");
  write_bytes(path, craft(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", "abcd"));
  EXPECT_LOAD_FAILS(path, "tensor 'w': header entry has no \"dtype\" string");
  write_bytes(path, craft(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", "abcd"));
  EXPECT_LOAD_FAILS(path, "tensor 'w': header entry has no \"shape\" array");
  const std::string dup =
      R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  write_bytes(path, craft(dup, "abcd"));
  EXPECT_LOAD_FAILS(path, "header names 'w' more than once");
  // A name with a newline is escaped: the message stays on one line.
  write_bytes(path,
              craft("{\"bad\\nname\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", std::string(8, '\0')));
  EXPECT_LOAD_FAILS(path, "tensor 'bad\\x0aname' has dtype 'F64'");
}

TEST_F(Safetensors, UnsupportedDtypes) {
  const std::string path = file("dtype.safetensors");
  for (const char* dtype : {"F16", "BF16", "F64", "I64", "U8", "BOOL", "f32", ""}) {
    write_bytes(path, craft(std::string(R"({"w":{"dtype":")") + dtype + R"(","shape":[2],"data_offsets":[0,8]}})",
                            std::string(8, '\0')));
    EXPECT_LOAD_FAILS(path, std::string("tensor 'w' has dtype '") + dtype + "'; attn reads F32 and I32 only");
  }
  write_bytes(path, craft(R"({"w":{"dtype":32,"shape":[2],"data_offsets":[0,8]}})", std::string(8, '\0')));
  EXPECT_LOAD_FAILS(path, "no \"dtype\" string");
}

TEST_F(Safetensors, BadShapesAndOffsets) {
  const std::string path = file("offsets.safetensors");
  auto entry = [](const std::string& name, const std::string& shape, const std::string& offsets) {
    return "\"" + name + R"(":{"dtype":"F32","shape":)" + shape + R"(,"data_offsets":)" + offsets + "}";
  };
  const std::string data(80, '\0');
  write_bytes(path, craft("{" + entry("w", "[4,5]", "[0,64]") + "}", data));
  EXPECT_LOAD_FAILS(path, "tensor 'w' data_offsets [0, 64] hold 64 bytes, shape (4, 5) float32 needs 80");
  write_bytes(path, craft("{" + entry("w", "[4,5]", "[0,84]") + "}", data));
  EXPECT_LOAD_FAILS(path,
                    "tensor 'w' data_offsets [0, 84] run past the end of the data buffer (80 bytes; truncated file?)");
  write_bytes(path, craft("{" + entry("w", "[2]", "[8,0]") + "}", data));
  EXPECT_LOAD_FAILS(path, "tensor 'w': \"data_offsets\" must be [begin, end] with 0 <= begin <= end, got [8,0]");
  write_bytes(path, craft("{" + entry("w", "[2]", "[-8,0]") + "}", data));
  EXPECT_LOAD_FAILS(path, "\"data_offsets\" must be [begin, end]");
  write_bytes(path, craft("{" + entry("w", "[2]", "[0,8,16]") + "}", data));
  EXPECT_LOAD_FAILS(path, "\"data_offsets\" must be [begin, end]");
  write_bytes(path, craft("{" + entry("w", "[2]", "\"0-8\"") + "}", data));
  EXPECT_LOAD_FAILS(path, "\"data_offsets\" must be [begin, end]");
  write_bytes(path, craft("{" + entry("w", "[2]", "[0,18446744073709551615]") + "}", data));
  EXPECT_LOAD_FAILS(path, "run past the end");
  write_bytes(path, craft("{" + entry("a", "[4]", "[0,16]") + "," + entry("b", "[4]", "[8,24]") + "}", data));
  EXPECT_LOAD_FAILS(path, "tensors 'a' [0, 16] and 'b' [8, 24] overlap");
  write_bytes(path, craft("{" + entry("a", "[4]", "[0,16]") + "," + entry("b", "[4]", "[0,16]") + "}", data));
  EXPECT_LOAD_FAILS(path, "overlap");
  // An empty tensor overlaps nothing.
  write_bytes(path,
              craft("{" + entry("a", "[4]", "[0,16]") + "," + entry("e", "[0]", "[8,8]") + "}", data.substr(0, 16)));
  EXPECT_EQ(load_safetensors(path).tensors.size(), 2u);
  write_bytes(path, craft("{" + entry("w", "[-2]", "[0,8]") + "}", data));
  EXPECT_LOAD_FAILS(path, "tensor 'w': \"shape\" must hold non-negative integers, got [-2]");
  write_bytes(path, craft("{" + entry("w", "[2.0]", "[0,8]") + "}", data));
  EXPECT_LOAD_FAILS(path, "\"shape\" must hold non-negative integers, got [2.0]");
  write_bytes(path, craft("{" + entry("w", "[\"2\"]", "[0,8]") + "}", data));
  EXPECT_LOAD_FAILS(path, "\"shape\" must hold non-negative integers");
  write_bytes(path, craft("{" + entry("w", "[4611686018427387904,4611686018427387904]", "[0,8]") + "}", data));
  EXPECT_LOAD_FAILS(path, "is too large");
  write_bytes(path, craft("{" + entry("w", "[4611686018427387904,4611686018427387904,0]", "[0,0]") + "}", data));
  EXPECT_LOAD_FAILS(path, "is too large");
  // Huge dimension times zero is a valid empty tensor.
  write_bytes(path, craft("{" + entry("w", "[1000000000,0]", "[0,0]") + "}", ""));
  EXPECT_EQ(load_safetensors(path).at("w").numel(), 0);
}

TEST_F(Safetensors, MetadataMustBeStrings) {
  const std::string path = file("meta.safetensors");
  write_bytes(path, craft(R"({"__metadata__":{"epoch":3}})", ""));
  EXPECT_LOAD_FAILS(path, "\"__metadata__\" value for key 'epoch' must be a string, got 3");
  write_bytes(path, craft(R"({"__metadata__":["a"]})", ""));
  EXPECT_LOAD_FAILS(path, "\"__metadata__\" must be a JSON object of strings");
}

TEST_F(Safetensors, MissingFilesAndDirectories) {
  EXPECT_LOAD_FAILS(file("absent.safetensors"), "cannot open: No such file or directory");
  EXPECT_LOAD_FAILS(dir_, "not a regular file");
}

TEST_F(Safetensors, LoadIntoCopiesByName) {
  const std::string path = file("m.safetensors");
  save_safetensors(path, {{"b", Tensor::full({2}, 2.0f)}, {"w", Tensor::full({2, 3}, 1.0f)}});
  Tensor w = Tensor::zeros({2, 3}).set_requires_grad(true);
  Tensor b = Tensor::zeros({2}).set_requires_grad(true);
  load_into(load_safetensors(path), {{"w", w}, {"b", b}}, "m.safetensors");
  EXPECT_EQ(w.to_vector(), std::vector<float>(6, 1.0f));
  EXPECT_EQ(b.to_vector(), std::vector<float>(2, 2.0f));
  EXPECT_TRUE(w.requires_grad());
}

TEST_F(Safetensors, LoadIntoChecksEverythingBeforeCopying) {
  const std::string path = file("m.safetensors");
  save_safetensors(path,
                   {{"a", Tensor::full({3}, 1.0f)}, {"w", Tensor::full({5, 4}, 1.0f)}, {"extra", Tensor::zeros({1})}});
  const SafetensorsFile f = load_safetensors(path);
  Tensor a = Tensor::zeros({3});
  Tensor w = Tensor::zeros({4, 5});
  Tensor m = Tensor::zeros({2});
  EXPECT_THROW_MSG(load_into(f, {{"a", a}, {"w", w}}, "model.safetensors"), IoError,
                   "model.safetensors: cannot load: tensor 'w' expected (4, 5) float32, file has (5, 4) float32; "
                   "unexpected tensor 'extra' (1)");
  EXPECT_EQ(a.to_vector(), std::vector<float>(3, 0.0f));  // 'a' matched but nothing was copied
  EXPECT_THROW_MSG(load_into(f, {{"a", a}, {"missing", m}}), IoError,
                   path + ": cannot load: missing tensor 'missing' (2) float32");
  Tensor ids = Tensor::zeros({3}, DType::i32);
  EXPECT_THROW_MSG(load_into(f.subset("a"), {{"", ids}}), IoError,
                   "tensor '' expected (3) int32, file has (3) float32");
  EXPECT_EQ(a.to_vector(), std::vector<float>(3, 0.0f));
  EXPECT_THROW_MSG(load_into(f, {{"a", a}, {"a", a}}), ValueError, "load_into: destination name 'a' appears twice");
  // subset() strips the prefix and keeps the metadata.
  save_safetensors(path, {{"model.w", Tensor::full({2}, 4.0f)}, {"optimizer.0.step", Tensor::zeros({1}, DType::i32)}},
                   {{"attn", "{}"}});
  const SafetensorsFile g = load_safetensors(path);
  Tensor w2 = Tensor::zeros({2});
  load_into(g.subset("model."), {{"w", w2}});
  EXPECT_EQ(w2.to_vector(), std::vector<float>(2, 4.0f));
  EXPECT_EQ(g.subset("optimizer.").tensors[0].first, "0.step");
  EXPECT_EQ(g.subset("model.").metadata.at("attn"), "{}");
}

TEST_F(Safetensors, SaveArgumentErrors) {
  const std::string path = file("x.safetensors");
  Tensor t = Tensor::zeros({1});
  EXPECT_THROW_MSG(save_safetensors(path, {{"a", t}, {"a", t}}), ValueError, "tensor name 'a' appears twice");
  EXPECT_THROW_MSG(save_safetensors(path, {{"", t}}), ValueError, "empty tensor name");
  EXPECT_THROW_MSG(save_safetensors(path, {{"__metadata__", t}}), ValueError, "'__metadata__' cannot be a tensor name");
  EXPECT_THROW_MSG(save_safetensors(path, {{"u", Tensor()}}), ValueError, "tensor 'u' is undefined");
  EXPECT_THROW_MSG(save_safetensors(path, {{"a", t}}, {{"k", "\xff\xfe"}}), ValueError, "not valid UTF-8");
  EXPECT_TRUE(listing().empty());
}

TEST_F(Safetensors, UnwritableDestinationLeavesNoFile) {
  const std::vector<std::pair<std::string, Tensor>> ts = {{"a", Tensor::zeros({4})}};
  // A directory that does not exist.
  const std::string nowhere = file("no/such/dir/m.safetensors");
  EXPECT_THROW_MSG(save_safetensors(nowhere, ts), IoError, nowhere + ": cannot create a temporary file");
  // A "directory" that is a regular file.
  write_bytes(file("plain"), "x");
  EXPECT_THROW_MSG(save_safetensors(file("plain/m.safetensors"), ts), IoError, "Not a directory");
  // The target is a directory: refused before anything is written.
  fs::create_directory(file("target"));
  write_bytes(file("target/keep"), "x");
  EXPECT_THROW_MSG(save_safetensors(file("target"), ts), IoError, file("target") + ": is a directory, not a file");
  // A read-only directory (only meaningful when not running as root).
  fs::create_directory(file("ro"));
  fs::permissions(file("ro"), fs::perms::owner_read | fs::perms::owner_exec);
  if (::geteuid() != 0) EXPECT_THROW_MSG(save_safetensors(file("ro/m.safetensors"), ts), IoError, "Permission denied");
  fs::permissions(file("ro"), fs::perms::owner_all);
  EXPECT_EQ(listing(), (std::vector<std::string>{"plain", "ro", "target"}));
  EXPECT_TRUE(fs::is_empty(file("ro")));
}

TEST_F(Safetensors, WriteFailureMidFileKeepsTheOldFile) {
  // RLIMIT_FSIZE makes write() fail with EFBIG part-way through the data.
  const std::string path = file("ckpt.safetensors");
  save_safetensors(path, {{"old", Tensor::full({4}, 1.0f)}});
  const std::string before = read_bytes(path);
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto* previous = ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = saved;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string message;
  try {
    save_safetensors(path, {{"new", Tensor::zeros({100000})}});
  } catch (const IoError& e) {
    message = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::signal(SIGXFSZ, previous);
  EXPECT_NE(message.find(path + ": cannot write: File too large"), std::string::npos) << message;
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_EQ(listing(), std::vector<std::string>{"ckpt.safetensors"});
}

TEST_F(Safetensors, RandomByteFlipsLoadOrThrowIoError) {
  const std::string path = file("good.safetensors");
  save_safetensors(path, sample_tensors(), {{"attn", R"({"vocab":["a","b"]})"}});
  const std::string good = read_bytes(path);
  const std::string bad = file("flipped.safetensors");
  Rng rng(1234);
  int loaded = 0, failed = 0;
  for (int iter = 0; iter < 1500; ++iter) {
    std::string bytes = good;
    const int flips = 1 + static_cast<int>(rng.below(4));
    for (int k = 0; k < flips; ++k) {
      // Mostly the length field and the header, where parsing happens.
      const uint64_t limit = rng.below(4) == 0 ? bytes.size() : std::min<uint64_t>(bytes.size(), 8 + 300);
      const size_t at = static_cast<size_t>(rng.below(limit));
      bytes[at] = rng.below(2) ? static_cast<char>(rng.next()) : static_cast<char>(bytes[at] ^ (1 << rng.below(8)));
    }
    if (rng.below(8) == 0) bytes.resize(static_cast<size_t>(rng.below(bytes.size())));
    write_bytes(bad, bytes);
    try {
      const SafetensorsFile f = load_safetensors(bad);
      ++loaded;
      for (const auto& [n, t] : f.tensors) EXPECT_GE(t.numel(), 0);
    } catch (const IoError& e) {
      ++failed;
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "iteration " << iter << ": unexpected exception type: " << e.what();
    }
  }
  // Both outcomes occur (flips in the data buffer still load).
  EXPECT_GT(loaded, 0);
  EXPECT_GT(failed, 0);
}

}  // namespace
}  // namespace attn::io

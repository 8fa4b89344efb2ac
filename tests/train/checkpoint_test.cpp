#include "attn/train/checkpoint.h"

#include <filesystem>
#include <fstream>
#include <limits>

#include "attn/decode/checkpoint_kind.h"
#include "test_support.h"

namespace attn::train {
namespace {

namespace fs = std::filesystem;

Tensor make_param(const std::string& name, std::vector<float> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return Tensor::from_vector(std::move(values), {n}).set_requires_grad(true).set_name(name);
}

// Two Adam steps on two parameters, so the optimizer has moments and a step count.
struct Trained {
  Tensor w = make_param("w", {0.5f, -1.5f, 2.0f});
  Tensor b = make_param("b", {0.25f});
  Adam adam{{w, b}, AdamOptions{.lr = 0.1f}};
  Trained() {
    for (int step = 0; step < 2; ++step) {
      w.grad_accumulator().copy_from(Tensor::from_vector(std::vector<float>{0.1f, -0.2f, 0.3f}, {3}));
      b.grad_accumulator().copy_from(Tensor::from_vector(std::vector<float>{1.0f}, {1}));
      adam.step();
      adam.zero_grad();
    }
  }
  NamedTensors parameters() const { return {{"w", w}, {"b", b}}; }
};

TEST(Checkpoint, ModelAndOptimizerRoundTrip) {
  Trained trained;
  const std::string path = attn::testing::temp_path("round_trip.safetensors");
  save_run_checkpoint(path, trained.parameters(), {{"format", "attn-test"}, {"step", 2}}, &trained.adam);
  EXPECT_EQ(checkpoint_format(path), "attn-test");

  const io::SafetensorsFile file = io::load_safetensors(path);
  EXPECT_NE(file.find("optimizer.step_count"), nullptr);
  EXPECT_EQ(read_run_metadata(file, path, "attn-test", "a test checkpoint").at("step"), 2);

  // The model tensors load without the optimizer entries getting in the way.
  Tensor w = make_param("w", {0, 0, 0}), b = make_param("b", {0});
  load_model_parameters(file, {{"w", w}, {"b", b}}, path);
  EXPECT_TRUE(testing::tensors_close(w, trained.w, 0.0f, 0.0f));
  EXPECT_TRUE(testing::tensors_close(b, trained.b, 0.0f, 0.0f));

  // The optimizer resumes with the same step count and moments.
  Adam resumed({w, b}, AdamOptions{.lr = 0.1f});
  load_optimizer_state(file, resumed, path);
  const OptimizerState expected = trained.adam.state(), got = resumed.state();
  EXPECT_EQ(got.step, expected.step);
  ASSERT_EQ(got.tensors.size(), expected.tensors.size());
  for (size_t i = 0; i < got.tensors.size(); ++i) {
    EXPECT_EQ(got.tensors[i].first, expected.tensors[i].first);
    const Tensor &g = got.tensors[i].second, &e = expected.tensors[i].second;
    if (e.dtype() == DType::i32)  // "optimizer.<i>.step"
      EXPECT_EQ(g.i32()[0], e.i32()[0]) << got.tensors[i].first;
    else
      EXPECT_TRUE(testing::tensors_close(g, e, 0.0f, 0.0f)) << got.tensors[i].first;
  }
  fs::remove(path);
}

// Issue 18 item 8: NaN Adam moments in last.safetensors loaded, and the resumed run then
// failed steps later with "try a smaller --lr".
TEST(Checkpoint, NonFiniteOptimizerStateIsRefused) {
  Trained trained;
  const std::string path = attn::testing::temp_path("nan_moments.safetensors");
  save_run_checkpoint(path, trained.parameters(), {{"format", "attn-test"}}, &trained.adam);
  io::SafetensorsFile file = io::load_safetensors(path);
  fs::remove(path);
  std::string damaged;
  for (auto& [name, t] : file.tensors)
    if (damaged.empty() && name.rfind("optimizer.", 0) == 0 && t.dtype() == DType::f32 && t.numel() > 0) {
      t.f32()[0] = std::numeric_limits<float>::quiet_NaN();
      damaged = name;
    }
  ASSERT_FALSE(damaged.empty());
  Tensor w = make_param("w", {0, 0, 0}), b = make_param("b", {0});
  Adam resumed({w, b}, AdamOptions{.lr = 0.1f});
  EXPECT_THROW_MSG(
      load_optimizer_state(file, resumed, path), ValueError,
      path + ": optimizer state '" + damaged + "' holds NaN (a damaged checkpoint: cannot resume from it)");
}

// A checkpoint without checksums (another tool, an older attn) loads, with a note.
TEST(Checkpoint, UnverifiedFileLoadsWithANote) {
  const std::string path = attn::testing::temp_path("unverified.safetensors");
  const std::string header = R"({"__metadata__":{"attn":"{\"format\":\"attn-test\"}"}})";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>(header.size() >> (8 * i));
  { std::ofstream(path, std::ios::binary) << bytes << header; }
  const io::SafetensorsFile file = io::load_safetensors(path);
  EXPECT_FALSE(file.verified);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(read_run_metadata(file, path, "attn-test", "x").at("format"), "attn-test");
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(
      said.find(path + " has no checksums (written by another tool or an older attn): its tensors are unverified"),
      std::string::npos)
      << said;
  fs::remove(path);
}

TEST(Checkpoint, Errors) {
  Trained trained;
  const std::string path = attn::testing::temp_path("errors.safetensors");
  // A best-model checkpoint has no optimizer state to resume from.
  save_run_checkpoint(path, trained.parameters(), {{"format", "attn-test"}});
  io::SafetensorsFile file = io::load_safetensors(path);
  Adam adam({trained.w, trained.b}, AdamOptions{});
  EXPECT_THROW_MSG(load_optimizer_state(file, adam, path), IoError, "no optimizer state to resume from");
  EXPECT_THROW_MSG(read_run_metadata(file, path, "attn-lm", "a language model checkpoint"), IoError,
                   "not a language model checkpoint (metadata format 'attn-test')");
  // A tensor the model lacks, or a missing one, fails before anything is copied.
  Tensor w = make_param("w", {7, 7, 7});
  EXPECT_THROW_MSG(load_model_parameters(file, {{"w", w}}, path), IoError, "b");
  EXPECT_EQ(w.f32()[0], 7.0f);

  // Files without attn metadata, or with metadata that is not a JSON object.
  io::save_safetensors(path, trained.parameters());
  EXPECT_EQ(checkpoint_format(path), "");
  EXPECT_THROW_MSG(read_run_metadata(io::load_safetensors(path), path, "attn-test", "x"), IoError,
                   "no 'attn' metadata");
  io::save_safetensors(path, trained.parameters(), {{io::kAttnMetadataKey, "[1, 2]"}});
  EXPECT_EQ(checkpoint_format(path), "");
  EXPECT_THROW_MSG(read_run_metadata(io::load_safetensors(path), path, "attn-test", "x"), IoError, "not a JSON object");
  io::save_safetensors(path, trained.parameters(), {{io::kAttnMetadataKey, "{broken"}});
  EXPECT_THROW_MSG(read_run_metadata(io::load_safetensors(path), path, "attn-test", "x"), IoError,
                   "'attn' metadata is not valid JSON");
  // Nested deeper than attn/json.h's limit: refused by name (it overflowed the stack later).
  io::save_safetensors(path, trained.parameters(),
                       {{io::kAttnMetadataKey, std::string(100000, '[') + std::string(100000, ']')}});
  EXPECT_THROW_MSG(read_run_metadata(io::load_safetensors(path), path, "attn-test", "x"), IoError,
                   "'attn' metadata nests deeper than 64 levels");
  EXPECT_EQ(checkpoint_format(path), "");
  // A version from a newer attn, or one that is not a version at all.
  io::save_safetensors(path, trained.parameters(),
                       {{io::kAttnMetadataKey, R"({"format": "attn-test", "version": 99})"}});
  EXPECT_THROW_MSG(read_run_metadata(io::load_safetensors(path), path, "attn-test", "x"), IoError,
                   "written by a newer attn (checkpoint version 99; this one reads up to 1)");
  io::save_safetensors(path, trained.parameters(),
                       {{io::kAttnMetadataKey, R"({"format": "attn-test", "version": "1"})"}});
  EXPECT_THROW_MSG(read_run_metadata(io::load_safetensors(path), path, "attn-test", "x"), IoError,
                   "bad 'attn' metadata: version \"1\"");
  EXPECT_THROW(checkpoint_format("/nonexistent/model.safetensors"), IoError);
  fs::remove(path);
}

// The checkpoint kinds (decode/checkpoint_kind.h): every kind's format names it back, and a
// file's kind is read from its metadata; a format attn does not know names the known ones.
TEST(CheckpointKind, FormatsNameTheirKinds) {
  using decode::CheckpointKind;
  ASSERT_EQ(decode::checkpoint_kinds().size(), 6u);
  for (CheckpointKind kind : decode::checkpoint_kinds())
    EXPECT_EQ(decode::kind_of_format(decode::format_name(kind)), kind) << decode::format_name(kind);
  EXPECT_STREQ(decode::format_name(CheckpointKind::translation), "attn-translation");
  EXPECT_THROW_MSG(decode::kind_of_format("attn-test"), ValueError,
                   "unknown checkpoint format 'attn-test' (this attn reads attn-seq2seq, attn-translation, "
                   "attn-classifier, attn-lm, attn-g2p, attn-asr)");
}

TEST(CheckpointKind, ReadFromTheFileAndRequired) {
  using decode::CheckpointKind;
  Trained trained;
  const std::string lm = attn::testing::temp_path("kind_lm.safetensors"),
                    other = attn::testing::temp_path("kind_other.safetensors");
  save_run_checkpoint(lm, trained.parameters(), {{"format", "attn-lm"}, {"step", 2}}, &trained.adam);
  save_run_checkpoint(other, trained.parameters(), {{"format", "attn-test"}}, &trained.adam);
  EXPECT_EQ(decode::checkpoint_kind(lm), CheckpointKind::lm);
  EXPECT_EQ(decode::find_checkpoint_kind(lm), CheckpointKind::lm);
  EXPECT_EQ(decode::require_checkpoint_kind(lm, {CheckpointKind::translation, CheckpointKind::lm}), CheckpointKind::lm);
  EXPECT_THROW_MSG(
      decode::require_checkpoint_kind(lm, {CheckpointKind::seq2seq, CheckpointKind::translation}, "; hint"), ValueError,
      lm + " is not a seq2seq or translation checkpoint (format 'attn-lm'); hint");
  EXPECT_THROW_MSG(decode::require_checkpoint_kind(lm, {CheckpointKind::classifier}), ValueError,
                   "is not a classifier checkpoint (format 'attn-lm')");
  EXPECT_FALSE(decode::find_checkpoint_kind(other).has_value());
  EXPECT_THROW_MSG(decode::checkpoint_kind(other), IoError, other + ": unknown checkpoint format 'attn-test'");
  fs::remove(lm);
  fs::remove(other);
}

}  // namespace
}  // namespace attn::train

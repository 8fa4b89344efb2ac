#pragma once
// Subword tokenisation of real text with SentencePiece (unigram or BPE). The ids follow
// attn's seq2seq conventions (include/attn/models/batch.h): PAD = 0, BOS = 1, EOS = 2,
// UNK = 3, then the learned pieces. A model is a SentencePiece .model file; its bytes can be
// embedded in a checkpoint (serialized / from_serialized) so a checkpoint is self-contained.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attn/models/batch.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace attn::data {

inline constexpr int32_t kSubwordUnk = models::kUnk;  // the unknown piece "<unk>" (PAD 0, BOS 1, EOS 2: models/batch.h)

struct SubwordTrainOptions {
  int vocab_size = 8000;               // V, including the 4 special pieces
  std::string model_type = "unigram";  // "unigram" or "bpe"
  float character_coverage = 1.0f;     // in (0, 1]; 1.0 keeps every character seen
  int64_t max_sentences = 0;           // 0 = all; else an evenly spaced (deterministic) sample
  bool verbose = false;                // let SentencePiece log its progress to stderr
};

// Trains a model on `lines` (in memory, through a SentenceIterator) and writes
// <model_prefix>.model and <model_prefix>.vocab. Throws ValueError on bad options (vocab_size
// < 5, unknown model_type, coverage outside (0, 1], no non-empty line, or a vocabulary too
// large for the text: SentencePiece's message is kept), IoError when the directory of
// `model_prefix` does not exist or the files cannot be written.
void train_subword_model(const std::vector<std::string>& lines, const std::string& model_prefix,
                         const SubwordTrainOptions& options);

// A loaded SentencePiece model. Copies share the (immutable, thread-safe) processor.
class SubwordModel {
 public:
  // An empty model (to be assigned later): every method but empty() and path() throws
  // ValueError.
  SubwordModel() = default;
  bool empty() const { return processor_ == nullptr; }

  // Loads a .model file. Throws IoError naming the path when it is missing or not a valid
  // model, ValueError when its special ids are not PAD 0 / BOS 1 / EOS 2 / UNK 3.
  static SubwordModel load(const std::string& path);
  // The model from its proto bytes (as serialized() returns them); `name` stands in for the
  // path in messages and path(). Throws IoError when the bytes are not a valid model.
  static SubwordModel from_serialized(const std::string& bytes, const std::string& name);

  // Text -> piece ids, no BOS/EOS. Empty text gives no ids.
  std::vector<int32_t> encode(const std::string& text) const;
  // Ids -> text: PAD and BOS are skipped, decoding stops at the first EOS. Throws
  // ValueError naming an id outside [0, V).
  std::string decode(const std::vector<int32_t>& ids) const;
  // The piece of each id ("▁Zwei", "<unk>", ...). Throws ValueError on an id outside [0, V).
  std::vector<std::string> pieces(const std::vector<int32_t>& ids) const;
  // Text -> pieces (encode then pieces).
  std::vector<std::string> encode_pieces(const std::string& text) const;
  // Text -> pieces as written in the text: the same segmentation as encode(), but an unknown
  // piece is its surface text ("東京"), not "<unk>" (the pointer-generator copies it by it).
  std::vector<std::string> encode_surfaces(const std::string& text) const;
  // Pieces -> text (SentencePiece's DecodePieces: "▁" becomes a space; what it does with a
  // piece outside the vocabulary is SentencePiece's behaviour, not checked here).
  std::string decode_pieces(const std::vector<std::string>& pieces) const;

  int32_t vocab_size() const;  // V
  const std::string& path() const { return path_; }
  // The model proto bytes (what a .model file holds).
  std::string serialized() const;

 private:
  const sentencepiece::SentencePieceProcessor& processor() const;
  std::shared_ptr<const sentencepiece::SentencePieceProcessor> processor_;
  std::string path_;
};

}  // namespace attn::data

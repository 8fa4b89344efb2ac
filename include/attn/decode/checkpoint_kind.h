#pragma once
// The kinds of checkpoint attn writes, each named once by its metadata format
// ("attn": {"format": ...}). The CLI, the Python module and the trainers dispatch on
// CheckpointKind; no format string is compared outside src/decode/checkpoint_kind.cpp.
//
// A new kind: add it to the enum and to the table in checkpoint_kind.cpp (its format, a
// phrase for messages); the compiler then names every switch that must handle it.
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace attn::decode {

enum class CheckpointKind {
  seq2seq,      // "attn-seq2seq": an RNN encoder-decoder on a synthetic task (decode/seq2seq.h)
  translation,  // "attn-translation": an RNN or Transformer translator (decode/translate.h)
  classifier,   // "attn-classifier": a sentence classifier (decode/classify.h)
  lm,           // "attn-lm": a character language model (decode/sample.h)
  g2p,          // "attn-g2p": an RNN or Transformer grapheme-to-phoneme model (decode/g2p.h)
  asr,          // "attn-asr": a listen-attend-spell speech recogniser (decode/asr.h)
};

// Every kind, in the order messages list them.
const std::vector<CheckpointKind>& checkpoint_kinds();
// "attn-translation".
const char* format_name(CheckpointKind kind);
// "translation", "language-model" (for messages: "a translation checkpoint").
const char* kind_noun(CheckpointKind kind);
// The kind whose format is `format`; ValueError naming the known formats otherwise.
CheckpointKind kind_of_format(const std::string& format);

// The kind of the checkpoint at `path`. IoError when the file is not safetensors, holds no
// attn metadata, or a format this attn does not know (naming the ones it knows).
CheckpointKind checkpoint_kind(const std::string& path);
// The same, but nothing (instead of an IoError) for a safetensors file without attn metadata
// or with a format this attn does not know.
std::optional<CheckpointKind> find_checkpoint_kind(const std::string& path);

// The kind of the checkpoint at `path` when it is one of `allowed`; otherwise ValueError:
//   "m.safetensors is not a seq2seq or translation checkpoint (format 'attn-lm')" + hint
CheckpointKind require_checkpoint_kind(const std::string& path, std::initializer_list<CheckpointKind> allowed,
                                       const std::string& hint = "");

}  // namespace attn::decode

// The checkpoint kinds and their metadata formats (see decode/checkpoint_kind.h).
#include "attn/decode/checkpoint_kind.h"

#include "attn/decode/asr.h"
#include "attn/decode/classify.h"
#include "attn/decode/g2p.h"
#include "attn/decode/sample.h"
#include "attn/decode/seq2seq.h"
#include "attn/decode/translate.h"
#include "attn/enum_names.h"
#include "attn/error.h"
#include "attn/io/checkpoint_read.h"
#include "attn/printable.h"

namespace attn::decode {
namespace {

struct KindInfo {
  CheckpointKind kind;
  const char* format;
  const char* noun;
};

// The one table of formats.
const KindInfo kKinds[] = {
    {CheckpointKind::seq2seq, kSeq2SeqFormat, "seq2seq"},
    {CheckpointKind::translation, kTranslationFormat, "translation"},
    {CheckpointKind::classifier, kClassifierFormat, "classifier"},
    {CheckpointKind::lm, kLmFormat, "language-model"},
    {CheckpointKind::g2p, kG2pFormat, "G2P"},
    {CheckpointKind::asr, kAsrFormat, "ASR"},
};

const KindInfo& info(CheckpointKind kind) {
  for (const KindInfo& k : kKinds)
    if (k.kind == kind) return k;
  throw ValueError("unknown checkpoint kind " + std::to_string(static_cast<int>(kind)));
}

std::string known_formats() {
  std::string s;
  for (const KindInfo& k : kKinds) s += (s.empty() ? "" : ", ") + std::string(k.format);
  return s;
}

}  // namespace

const std::vector<CheckpointKind>& checkpoint_kinds() {
  static const std::vector<CheckpointKind> kinds = table_column(kKinds, &KindInfo::kind);
  return kinds;
}

const char* format_name(CheckpointKind kind) { return info(kind).format; }
const char* kind_noun(CheckpointKind kind) { return info(kind).noun; }

CheckpointKind kind_of_format(const std::string& format) {
  for (const KindInfo& k : kKinds)
    if (format == k.format) return k.kind;
  throw ValueError("unknown checkpoint format '" + printable(format) + "' (this attn reads " + known_formats() + ")");
}

CheckpointKind checkpoint_kind(const std::string& path) {
  const std::string format = io::checkpoint_format(path);
  if (format.empty())
    throw IoError(path + ": no readable attn metadata (a file attn did not write, or damaged metadata)");
  try {
    return kind_of_format(format);
  } catch (const ValueError& e) {
    throw IoError(path + ": " + e.what());
  }
}

std::optional<CheckpointKind> find_checkpoint_kind(const std::string& path) {
  const std::string format = io::checkpoint_format(path);
  for (const KindInfo& k : kKinds)
    if (format == k.format) return k.kind;
  return std::nullopt;
}

CheckpointKind require_checkpoint_kind(const std::string& path, std::initializer_list<CheckpointKind> allowed,
                                       const std::string& hint) {
  const CheckpointKind kind = checkpoint_kind(path);
  std::string wanted;
  size_t i = 0;
  for (CheckpointKind k : allowed) {
    if (k == kind) return kind;
    wanted += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + std::string(kind_noun(k));
    ++i;
  }
  throw ValueError(path + " is not a " + wanted + " checkpoint (format '" + format_name(kind) + "')" + hint);
}

}  // namespace attn::decode

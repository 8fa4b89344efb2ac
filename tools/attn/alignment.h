#pragma once
// The alignment heatmap of one decoded synthetic-task input (common.cpp, beside
// write_alignment, which draws it): attn align draws it and, with --json, writes its weights.
#include <cstdint>
#include <string>
#include <vector>

#include "attn/models/seq2seq.h"
#include "attn/viz/plot.h"

namespace attn::cli {

// Decodes one source (greedy, or the best of a beam of `beam` with GNMT's length penalty α and
// coverage penalty β): its alignment heatmap, one panel per head, and the decoded output as
// text in *output; with the pointer-generator and `copy`, the copy probability of each output
// token in *copy.
viz::Heatmap alignment_heatmap(models::Seq2Seq& model, const std::vector<int32_t>& source, int beam,
                               float length_penalty, std::string* output, float coverage_penalty = 0.0f,
                               std::vector<float>* copy = nullptr);

}  // namespace attn::cli

#pragma once
// The pictures of `attn explain` (viz/plot.h: PNG, SVG or PDF by the file's extension).
#include <string>

#include "attn/explain/report.h"
#include "attn/explain/seq2seq_report.h"

namespace attn::explain {

// One sentence's measures as a heatmap: one row per measure (attention, |gradient x input|,
// LOO, |IG|, and rollout and flow for transformer-cls), each divided by its row's maximum so
// the darkest cell is the token that measure ranks first.
void write_sentence_picture(const ExplainedSentence& s, const std::string& path);

// A classifier report's pictures in `dir`, each as .png and .svg: the τ histograms (tau: the
// share of sentences per τ bin of 0.1), the erasure curves (erasure: the share of sentences
// whose decision has flipped with at most a fraction f of their tokens removed), and for
// bilstm-attn the permutation medians (permutation) and the adversarial JSDs (adversarial)
// against the maximum attention weight (the mean per bin of 0.1).
void write_report_pictures(const ExplainReport& r, const std::string& dir);

// One source's three maps as heatmap panels (rows: target tokens, columns: source tokens),
// each row of |gradient| and LOO divided by its maximum so the darkest cell is the source
// token that measure ranks first (the attention rows already sum to 1).
void write_pair_picture(const ExplainedPair& p, const std::string& path);

// An encoder-decoder report's pictures in `dir`, each as .png and .svg: the τ histograms per
// target token (tau) and the first source's maps (pair).
void write_seq2seq_report_pictures(const Seq2SeqReport& r, const std::string& dir);

}  // namespace attn::explain

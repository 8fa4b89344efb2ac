#pragma once
// What the two explain reports (report.cpp: classifiers, seq2seq_report.cpp) share, private to
// src/explain/: formatting figures into text, and the verdict their three Kendall τs give.
#include <string>

#include "attn/explain/report.h"

namespace attn::explain::detail {

// `pattern` (printf) filled with up to three doubles.
std::string format(const char* pattern, double a, double b = 0.0, double c = 0.0);

// The verdict of the mean τs attention–gradient (ag), attention–LOO (al) and gradient–LOO (gl):
// one of three patterns, filled with the τs in the order given:
//   measures_agree (gl, ag, al)   gl exceeds the better attention τ by more than 0.1
//   attention_tracks (ag, al, gl) else the better attention τ is at least 0.5
//   moderate (ag, al, gl)         else.
std::string tau_verdict(const TauSummary& ag, const TauSummary& al, const TauSummary& gl, const char* measures_agree,
                        const char* attention_tracks, const char* moderate);

}  // namespace attn::explain::detail

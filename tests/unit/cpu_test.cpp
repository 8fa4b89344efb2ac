// CPU features -> OpenBLAS kernels (kernels::blas_core_for), when attn replaces OpenBLAS's own
// pick, the OpenMP wait-policy default, and that this test executable runs the chosen kernels.
#include "attn/cpu.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "attn/error.h"
#include "attn/parallel.h"
#include "kernels/blas.h"
#include "test_support.h"

extern "C" char* openblas_get_corename(void);

namespace attn {
namespace {

CpuFeatures x86(const char* vendor, int family, int model) {
  CpuFeatures f;
  f.x86 = true;
  std::strcpy(f.vendor, vendor);
  f.family = family;
  f.model = model;
  f.sse3 = f.ssse3 = f.sse4_1 = f.sse4_2 = f.popcnt = true;
  return f;
}
CpuFeatures& with_avx2(CpuFeatures& f) {
  f.avx = f.avx2 = f.fma = f.f16c = f.os_ymm = true;
  f.bmi1 = f.bmi2 = f.lzcnt = f.movbe = true;
  return f;
}
CpuFeatures& with_avx512(CpuFeatures& f) {
  with_avx2(f);
  f.avx512f = f.avx512cd = f.avx512dq = f.avx512bw = f.avx512vl = f.os_zmm = true;
  return f;
}

// The machine of issue 22: a 5th-generation Xeon under KVM (cpu family 6, model 207), which
// OpenBLAS 0.3.21's model table does not know (it gave Prescott, 49 GFLOP/s against 225-276).
CpuFeatures issue_22_xeon() {
  CpuFeatures f = x86("GenuineIntel", 6, 207);
  with_avx512(f);
  f.avx512_vnni = f.avx512_bf16 = f.avx512_fp16 = f.avx_vnni = true;
  f.amx_tile = f.amx_bf16 = f.amx_int8 = f.os_amx = true;
  return f;
}

TEST(BlasCoreFor, Issue22XeonGetsTheBf16AvX512Kernels) {
  EXPECT_STREQ(kernels::blas_core_for(issue_22_xeon()), "Cooperlake");
}

TEST(BlasCoreFor, FutureModelNumbersDoNotMatter) {
  for (int model : {0, 143, 207, 255}) {
    CpuFeatures f = issue_22_xeon();
    f.model = model;
    EXPECT_STREQ(kernels::blas_core_for(f), "Cooperlake") << "model " << model;
    f.family = 19;  // a family no table lists
    EXPECT_STREQ(kernels::blas_core_for(f), "Cooperlake") << "family 19 model " << model;
  }
}

TEST(BlasCoreFor, AvX512WithoutBf16IsSkylakeX) {
  CpuFeatures f = x86("GenuineIntel", 6, 85);
  EXPECT_STREQ(kernels::blas_core_for(with_avx512(f)), "SkylakeX");
}

TEST(BlasCoreFor, AvX512TheOsDoesNotSaveFallsToAvX2) {
  CpuFeatures f = issue_22_xeon();
  f.os_zmm = false;
  EXPECT_STREQ(kernels::blas_core_for(f), "Haswell");
  f.os_ymm = false;  // no AVX state saved at all: SSE kernels
  EXPECT_STREQ(kernels::blas_core_for(f), "Core2");
}

TEST(BlasCoreFor, PartialAvX512IsNotEnough) {
  CpuFeatures f = x86("GenuineIntel", 6, 87);  // Knights-Landing-like: F and CD, no BW/VL/DQ
  with_avx2(f);
  f.avx512f = f.avx512cd = f.os_zmm = true;
  EXPECT_STREQ(kernels::blas_core_for(f), "Haswell");
}

TEST(BlasCoreFor, AmdZenWithAvX2) {
  CpuFeatures f = x86("AuthenticAMD", 25, 33);
  EXPECT_STREQ(kernels::blas_core_for(with_avx2(f)), "Zen");
  CpuFeatures hygon = x86("HygonGenuine", 24, 0);
  EXPECT_STREQ(kernels::blas_core_for(with_avx2(hygon)), "Zen");
}

TEST(BlasCoreFor, AmdZen4WithAvX512AndBf16) {
  CpuFeatures f = x86("AuthenticAMD", 25, 97);
  with_avx512(f).avx512_bf16 = true;
  EXPECT_STREQ(kernels::blas_core_for(f), "Cooperlake");
}

// The development machine of 2026-12-02: AMD EPYC "Genoa" under KVM (family 25, model 17),
// AVX-512 F/CD/DQ/BW/VL/VNNI/BF16, no AMX. OpenBLAS 0.3.21 picks Cooperlake there itself;
// measured against Zen, Haswell and SkylakeX (bench/results/2026-12-02-amd-genoa-blas-core-wait-policy.md),
// Cooperlake was the fastest on the 2048^3 product and within the noise on the step shapes, so AMD's
// AVX-512 (double-pumped 256-bit units on Zen 4) keeps the AVX-512 rule.
TEST(BlasCoreFor, AmdGenoaKeepsTheAvX512Kernels) {
  CpuFeatures f = x86("AuthenticAMD", 25, 17);
  with_avx512(f).avx512_bf16 = true;
  f.avx512_vnni = true;
  EXPECT_STREQ(kernels::blas_core_for(f), "Cooperlake");
  EXPECT_EQ(kernels::blas_cpu_level(f), kernels::blas_core_level("Cooperlake"));  // no AMX: not SapphireRapids
  EXPECT_FALSE(kernels::blas_core_should_switch(nullptr, "Cooperlake", kernels::blas_core_for(f)));
  EXPECT_TRUE(kernels::blas_core_should_switch(nullptr, "Zen", kernels::blas_core_for(f)));
  f.avx512_bf16 = false;  // an AMD AVX-512 CPU without BF16 gets SkylakeX, not Zen
  EXPECT_STREQ(kernels::blas_core_for(f), "SkylakeX");
}

TEST(BlasCoreFor, Avx2OnlyIntelIsHaswell) {
  CpuFeatures f = x86("GenuineIntel", 6, 158);
  EXPECT_STREQ(kernels::blas_core_for(with_avx2(f)), "Haswell");
  f.fma = false;  // AVX2 without FMA: the AVX kernels
  EXPECT_STREQ(kernels::blas_core_for(f), "Sandybridge");
}

TEST(BlasCoreFor, OlderVectorSets) {
  // SSE4.2 without AVX: Core2's SSSE3 kernels, which measured faster than Nehalem's.
  CpuFeatures sse42 = x86("GenuineIntel", 6, 26);
  EXPECT_STREQ(kernels::blas_core_for(sse42), "Core2");
  CpuFeatures ssse3 = sse42;
  ssse3.sse4_1 = ssse3.sse4_2 = false;
  EXPECT_STREQ(kernels::blas_core_for(ssse3), "Core2");
  CpuFeatures sse3 = ssse3;
  sse3.ssse3 = false;
  EXPECT_STREQ(kernels::blas_core_for(sse3), "Prescott");
  CpuFeatures avx = sse42;
  avx.avx = avx.os_ymm = true;
  EXPECT_STREQ(kernels::blas_core_for(avx), "Sandybridge");
}

TEST(BlasCoreFor, NotX86LeavesOpenBlasAlone) { EXPECT_STREQ(kernels::blas_core_for(CpuFeatures{}), ""); }

TEST(BlasCoreLevel, RanksByVectorIsaCaseInsensitively) {
  EXPECT_LT(kernels::blas_core_level("Prescott"), kernels::blas_core_level("Nehalem"));
  EXPECT_LT(kernels::blas_core_level("Sandybridge"), kernels::blas_core_level("Haswell"));
  EXPECT_EQ(kernels::blas_core_level("Haswell"), kernels::blas_core_level("zen"));
  EXPECT_LT(kernels::blas_core_level("SKYLAKEX"), kernels::blas_core_level("Cooperlake"));
  EXPECT_EQ(kernels::blas_core_level("bogus"), -1);
  EXPECT_EQ(kernels::blas_core_level(""), -1);
}

TEST(BlasCpuLevel, WhatTheCpuCanRun) {
  EXPECT_EQ(kernels::blas_cpu_level(issue_22_xeon()), kernels::blas_core_level("SapphireRapids"));
  CpuFeatures skx = x86("GenuineIntel", 6, 85);
  EXPECT_EQ(kernels::blas_cpu_level(with_avx512(skx)), kernels::blas_core_level("SkylakeX"));
  CpuFeatures zen = x86("AuthenticAMD", 23, 1);
  EXPECT_EQ(kernels::blas_cpu_level(with_avx2(zen)), kernels::blas_core_level("Zen"));
  // An SSE4.2 CPU can run Nehalem's kernels (OpenBLAS's own pick is kept) though attn picks Core2.
  const CpuFeatures sse42 = x86("GenuineIntel", 6, 26);
  EXPECT_EQ(kernels::blas_cpu_level(sse42), kernels::blas_core_level("Nehalem"));
  EXPECT_FALSE(kernels::blas_core_should_switch(nullptr, "Nehalem", kernels::blas_core_for(sse42)));
  EXPECT_TRUE(kernels::blas_core_should_switch(nullptr, "Prescott", kernels::blas_core_for(sse42)));
  EXPECT_EQ(kernels::blas_cpu_level(CpuFeatures{}), -1);
}

TEST(BlasCoreShouldSwitch, OnlyUpwardsAndNeverOverTheUser) {
  EXPECT_TRUE(kernels::blas_core_should_switch(nullptr, "Prescott", "Cooperlake"));  // issue 22
  EXPECT_TRUE(kernels::blas_core_should_switch(nullptr, "SkylakeX", "Cooperlake"));
  EXPECT_FALSE(kernels::blas_core_should_switch("Prescott", "Prescott", "Cooperlake"));  // the user wins
  EXPECT_FALSE(kernels::blas_core_should_switch("", "Prescott", "Cooperlake"));
  EXPECT_FALSE(kernels::blas_core_should_switch(nullptr, "Cooperlake", "Cooperlake"));
  EXPECT_FALSE(kernels::blas_core_should_switch(nullptr, "Zen", "Haswell"));                // same rank: keep
  EXPECT_FALSE(kernels::blas_core_should_switch(nullptr, "Bulldozer", "Sandybridge"));      // OpenBLAS's model pick
  EXPECT_FALSE(kernels::blas_core_should_switch(nullptr, "SapphireRapids", "Cooperlake"));  // never down
  EXPECT_FALSE(kernels::blas_core_should_switch(nullptr, "SomeFutureCore", "Cooperlake"));  // unknown: keep
  EXPECT_FALSE(kernels::blas_core_should_switch(nullptr, "Prescott", ""));                  // not x86
}

TEST(BlasCoreState, ThisExecutableRunsTheChosenKernels) {
  const kernels::BlasCoreState& s = kernels::blas_core_state();
  EXPECT_EQ(s.best, kernels::blas_core_for(read_cpu_features()));
  EXPECT_EQ(s.active, openblas_get_corename());
  if (s.user_set) GTEST_SKIP() << "OPENBLAS_CORETYPE=" << s.user_value << " is set: the user's choice wins";
  const bool switch_expected = kernels::blas_core_should_switch(nullptr, s.detected, s.best);
  EXPECT_EQ(s.switched, switch_expected) << s.switch_error;
  EXPECT_EQ(s.active, switch_expected ? s.best : s.detected) << "OpenBLAS picked " << s.detected;
  EXPECT_GE(kernels::blas_core_level(s.active), kernels::blas_core_level(s.best));
  EXPECT_EQ(std::getenv("OPENBLAS_CORETYPE"), nullptr) << "the switch must not leave OPENBLAS_CORETYPE set";
  // And GEMM still computes: 2x2 product through the re-initialised kernels.
  const float a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
  float c[4] = {};
  kernels::gemm(false, false, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2);
  EXPECT_EQ(std::vector<float>(c, c + 4), (std::vector<float>{19, 22, 43, 50}));
}

TEST(ReadCpuFeatures, IsConsistent) {
  const CpuFeatures f = read_cpu_features();
#if defined(__x86_64__)
  ASSERT_TRUE(f.x86);
  EXPECT_EQ(std::strlen(f.vendor), 12u);
  EXPECT_TRUE(f.sse3) << "every x86-64 CPU OpenBLAS supports has SSE3";
#endif
  if (has_avx512(f)) EXPECT_TRUE(has_avx2(f));
    // This build's own instruction set must be there (the library is x86-64-v2; CXXFLAGS may ask for more).
#ifdef __AVX2__
  EXPECT_TRUE(has_avx2(f));
#endif
#ifdef __AVX512BW__
  EXPECT_TRUE(has_avx512(f));
#endif
  EXPECT_FALSE(cpu_isa_summary(f).empty());
  EXPECT_EQ(best_isa_level(f) == IsaLevel::avx512, has_avx512(f) && f.bmi2 && f.lzcnt && f.movbe);
  EXPECT_EQ(isa_level_missing(IsaLevel::baseline, f), "") << "this build runs, so the CPU has x86-64-v2";
}

// ---- ISA levels of the kernels -------------------------------------------------------------------

TEST(IsaLevel, BestLevelFollowsTheFeatures) {
  CpuFeatures f = x86("GenuineIntel", 6, 143);
  EXPECT_EQ(best_isa_level(f), IsaLevel::baseline);
  EXPECT_EQ(best_isa_level(with_avx2(f)), IsaLevel::avx2);
  EXPECT_EQ(best_isa_level(with_avx512(f)), IsaLevel::avx512);
  // AVX-512 that the OS does not save (ZMM state off): avx2 only, and doctor-style names.
  f.os_zmm = false;
  EXPECT_EQ(best_isa_level(f), IsaLevel::avx2);
  EXPECT_EQ(isa_level_missing(IsaLevel::avx512, f), "ZMM state saved by the OS");
  // A CPU with AVX2 and FMA but not the rest of x86-64-v3 (BMI2): the avx2 level's code may use it.
  CpuFeatures g = x86("AuthenticAMD", 23, 1);
  with_avx2(g).bmi2 = false;
  EXPECT_EQ(best_isa_level(g), IsaLevel::baseline);
  EXPECT_EQ(isa_level_missing(IsaLevel::avx2, g), "BMI2");
  EXPECT_EQ(isa_level_missing(IsaLevel::avx512, g),
            "BMI2, AVX-512F, AVX-512CD, AVX-512DQ, AVX-512BW, AVX-512VL, "
            "ZMM state saved by the OS");
  // Not x86: only the baseline (the library's own flags).
  EXPECT_EQ(isa_level_missing(IsaLevel::baseline, CpuFeatures{}), "");
  EXPECT_EQ(best_isa_level(CpuFeatures{}), IsaLevel::baseline);
}

TEST(IsaLevel, AttnIsaForcesALevelTheCpuRuns) {
  CpuFeatures f = x86("GenuineIntel", 6, 143);
  with_avx512(f);
  EXPECT_EQ(choose_isa_level(nullptr, f), IsaLevel::avx512);
  EXPECT_EQ(choose_isa_level("", f), IsaLevel::avx512);
  EXPECT_EQ(choose_isa_level("baseline", f), IsaLevel::baseline);
  EXPECT_EQ(choose_isa_level("avx2", f), IsaLevel::avx2);
  EXPECT_EQ(choose_isa_level("avx512", f), IsaLevel::avx512);
  for (IsaLevel level : kIsaLevels) EXPECT_EQ(choose_isa_level(isa_level_name(level), f), level);
}

TEST(IsaLevel, AttnIsaErrorsNameWhatIsWrong) {
  CpuFeatures avx2_cpu = x86("AuthenticAMD", 23, 49);
  with_avx2(avx2_cpu);
  EXPECT_THROW_MSG(choose_isa_level("avx512", avx2_cpu), ValueError,
                   "ATTN_ISA=avx512: this CPU lacks AVX-512F, AVX-512CD, AVX-512DQ, AVX-512BW, AVX-512VL, ZMM state "
                   "saved by the OS (it runs up to avx2)");
  const CpuFeatures old_cpu = x86("GenuineIntel", 6, 44);
  EXPECT_THROW_MSG(choose_isa_level("avx2", old_cpu), ValueError,
                   "ATTN_ISA=avx2: this CPU lacks AVX, AVX2, FMA, F16C, BMI1, BMI2, LZCNT, MOVBE, YMM state saved "
                   "by the OS (it runs up to baseline)");
  for (const char* bad : {"AVX2", "avx3", "native", " avx2", "sse"})
    EXPECT_THROW_MSG(choose_isa_level(bad, avx2_cpu), ValueError,
                     "ATTN_ISA=" + std::string(bad) + " is not a level: expected baseline, avx2 or avx512");
}

TEST(OmpWaitPolicyDefault, PassiveUnlessTheEnvironmentDecides) {
  auto policy = [](std::vector<const char*> env) {
    env.push_back(nullptr);
    const char* p = omp_wait_policy_default(env.data());
    return p ? std::string(p) : std::string("(none)");
  };
  EXPECT_EQ(policy({}), "PASSIVE");
  EXPECT_EQ(policy({"HOME=/root", "PATH=/bin"}), "PASSIVE");
  EXPECT_EQ(policy({"OMP_WAIT_POLICY=ACTIVE"}), "(none)");
  EXPECT_EQ(policy({"OMP_WAIT_POLICY="}), "(none)");
  EXPECT_EQ(policy({"GOMP_SPINCOUNT=10000"}), "(none)");
  EXPECT_EQ(policy({"ATTN_DEFAULTED_ENV=OMP_WAIT_POLICY"}), "(none)") << "attn set it already: no second re-exec";
  EXPECT_EQ(policy({"OMP_WAIT_POLICYX=1", "XOMP_WAIT_POLICY=1"}), "PASSIVE") << "only the exact name counts";
  EXPECT_EQ(omp_wait_policy_default(nullptr), std::string("PASSIVE"));
}

TEST(OmpWaitPolicy, ReportsWhoChose) {
  // ctest sets OMP_WAIT_POLICY=PASSIVE for every test; run bare, this executable re-executes
  // itself with attn's default. Either way the report names a source.
  const WaitPolicy p = omp_wait_policy();
  if (std::getenv("OMP_WAIT_POLICY")) {
    EXPECT_EQ(p.value, std::getenv("OMP_WAIT_POLICY"));
    EXPECT_TRUE(p.source == "attn default" || p.source == "set by the user") << p.source;
  } else {
    EXPECT_EQ(p.source, std::getenv("GOMP_SPINCOUNT") ? "set by the user" : "libgomp default (spins, then sleeps)");
  }
}

}  // namespace
}  // namespace attn

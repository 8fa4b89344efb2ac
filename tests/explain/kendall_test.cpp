#include "attn/explain/kendall.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "attn/error.h"
#include "test_support.h"

namespace attn::explain {
namespace {

// scipy.stats.kendalltau's documented example (ties in both rankings: the asymptotic
// p-value with the tie-corrected variance): statistic -0.47140452079103173,
// pvalue 0.2827454599327748. scipy is not installed here, so the reference is its docs.
TEST(KendallTau, ScipyReferenceWithTies) {
  KendallTau r = kendall_tau_b({12, 2, 1, 12, 2}, {1, 4, 7, 1, 0});
  ASSERT_TRUE(r.defined);
  EXPECT_NEAR(r.tau, -0.47140452079103173, 1e-12);
  EXPECT_NEAR(r.p_value, 0.2827454599327748, 1e-12);
}

// A small reference table worked by hand: tau = (C − D) / sqrt((n0 − n_x)(n0 − n_y)).
TEST(KendallTau, HandWorkedTable) {
  struct Row {
    std::vector<float> x, y;
    double tau;
  };
  const std::vector<Row> table = {
      {{1, 2, 3, 4}, {1, 2, 3, 4}, 1.0},
      {{1, 2, 3, 4}, {4, 3, 2, 1}, -1.0},
      {{1, 2, 3, 4}, {2, 1, 4, 3}, (4.0 - 2.0) / 6.0},           // 4 concordant, 2 discordant
      {{1, 1, 2, 3}, {1, 2, 3, 4}, 5.0 / std::sqrt(5.0 * 6.0)},  // one x tie: C=5, D=0, n_x=1
      {{1, 1, 2, 2}, {1, 2, 1, 2}, 0.0},                         // one concordant, one discordant pair
  };
  for (size_t i = 0; i < table.size(); ++i) {
    KendallTau r = kendall_tau_b(table[i].x, table[i].y);
    ASSERT_TRUE(r.defined) << i;
    EXPECT_NEAR(r.tau, table[i].tau, 1e-12) << "row " << i;
    EXPECT_GE(r.p_value, 0.0);
    EXPECT_LE(r.p_value, 1.0);
  }
}

// Without ties and n <= 33 the p-value is exact: against a brute-force count over all n!
// permutations of the share with |τ| at least the observed one.
TEST(KendallTau, ExactPValueAgainstEnumeration) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7};
  for (const std::vector<float>& y : {std::vector<float>{3, 1, 2, 7, 5, 4, 6}, std::vector<float>{7, 6, 5, 1, 2, 3, 4},
                                      std::vector<float>{2, 1, 3, 4, 6, 5, 7}}) {
    const KendallTau observed = kendall_tau_b(x, y);
    std::vector<float> perm(x.size());
    std::iota(perm.begin(), perm.end(), 1.0f);
    double extreme = 0, total = 0;
    do {
      total += 1;
      extreme += std::fabs(kendall_tau_b(x, perm).tau) >= std::fabs(observed.tau) - 1e-12;
    } while (std::next_permutation(perm.begin(), perm.end()));
    EXPECT_NEAR(observed.p_value, extreme / total, 1e-12);
  }
}

TEST(KendallTau, UndefinedCasesAndErrors) {
  EXPECT_FALSE(kendall_tau_b({1}, {2}).defined);
  EXPECT_EQ(kendall_tau_b({1}, {2}).undefined_reason, "fewer than 2 tokens");
  EXPECT_FALSE(kendall_tau_b({}, {}).defined);
  KendallTau constant = kendall_tau_b({0.5f, 0.5f, 0.5f}, {1, 2, 3});
  EXPECT_FALSE(constant.defined);
  EXPECT_EQ(constant.undefined_reason, "constant ranking");
  EXPECT_FALSE(std::isnan(constant.tau));
  EXPECT_THROW_MSG(kendall_tau_b({1, 2}, {1}), ValueError, "kendall_tau_b: x has 2 values, y has 1");
}

}  // namespace
}  // namespace attn::explain

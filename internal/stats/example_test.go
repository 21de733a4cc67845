package stats_test

import (
	"fmt"

	"github.com/evosteer/evosteer-go/internal/stats"
)

// A candidate skill won 9 of 10 decisive pairs: the sign test's one-sided p-values of paper
// Eq. (10); ties do not count.
func ExampleSignTest() {
	pPlus, pMinus := stats.SignTest(9, 1)
	fmt.Printf("p+ = %.5f, p- = %.5f\n", pPlus, pMinus)
	// Output: p+ = 0.01074, p- = 0.99902
}

// The alpha-spending schedule of paper Eq. (11): look l of comparison j is tested at
// α/(j(j+1)·l(l+1)), so the levels of all looks of all comparisons sum to at most α.
func ExampleSpendLevel() {
	const alpha = 0.05
	total := 0.0
	for j := 1; j <= 3; j++ {
		for l := 1; l <= 3; l++ {
			total += stats.SpendLevel(alpha, j, l)
		}
	}
	// (Σ_{j≤3} 1/(j(j+1)))² = (3/4)², so the nine looks spend 9/16 of α.
	fmt.Printf("first look of the first comparison %.4f; 3 comparisons × 3 looks spend %.6f of %.2f\n",
		stats.SpendLevel(alpha, 1, 1), total, alpha)
	// Output: first look of the first comparison 0.0125; 3 comparisons × 3 looks spend 0.028125 of 0.05
}

// A structure bucket's lagged correction (Def. B.4): episodes whose reward beat their task's
// anchor push the bucket's log-ratio up, shrunk by the pseudocount and clipped.
func ExampleBucketCorrection() {
	p := stats.BucketParams{Pseudocount: 4, CorrectionBound: 0.5}
	// e^{ln 7.389 − 1.5} − 1 = 0.6487 and e^{ln 4.195 − 1.5} − 1 = −0.0640; ln(1 + 0.5846/6) = 0.0930.
	excess := stats.Excess(2, 1, 1.5) + stats.Excess(2, 0.5, 1.5) // a full and a half success, anchor 1.5
	fmt.Printf("excess %.4f, correction %.4f\n", excess, stats.BucketCorrection(p, stats.BucketLogPooledRatio(p, 2, excess)))
	// Output: excess 0.5846, correction 0.0930
}

package stats

import "math"

// Episode sources (episodes.source).
const (
	sourceCurrent   = "current"
	sourceNatural   = "natural_reference"
	sourceTreatment = "paired_treatment"
	sourceControl   = "paired_control"
)

// isPaired reports whether an episode is one arm of a paired comparison.
func isPaired(e *Episode) bool {
	return e.Source == sourceTreatment || e.Source == sourceControl
}

// logRewardTransform is log R_β(r) = ln(1 + (e^β − 1)·r), evaluated in exactly that order:
// a := exp(β) − 1, then a·r, then 1 + a·r, then ln. It is both the anchor transform
// u = ln(1 + a_β·p̂) (Def. B.1) and the terminal flow log R_β(x) used in the bucket ratios
// (Def. B.3). It is the plain form; the reference switches to a stable form only for β ≥ 700.
func logRewardTransform(beta, r float64) float64 {
	return math.Log(1 + (math.Exp(beta)-1)*r)
}

// clip returns x restricted to [lo, hi].
func clip(x, lo, hi float64) float64 {
	if x < lo {
		return lo
	}
	if x > hi {
		return hi
	}
	return x
}

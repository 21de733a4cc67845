package scoring

import (
	"fmt"
	"math"

	"github.com/evosteer/evosteer-go/internal/executor/openai"
)

// checkLogProb refuses a log-probability a server reports that is not a finite number ≤ 0 as a
// malformed reply: such a number is never handed to ρ.
func checkLogProb(v float64) error {
	switch {
	case math.IsNaN(v):
		return fmt.Errorf("%w: the log-prob is NaN", openai.ErrMalformed)
	case math.IsInf(v, 0):
		return fmt.Errorf("%w: the log-prob is %v", openai.ErrMalformed, v)
	case v > 0:
		return fmt.Errorf("%w: the log-prob %v is above 0", openai.ErrMalformed, v)
	}
	return nil
}

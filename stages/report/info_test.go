package report

import (
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
)

// TestAdmissionSettingsNameTheRules: the report's admission row names the look interval and
// every rule that changes which pairs count or how alpha is spent.
func TestAdmissionSettingsNameTheRules(t *testing.T) {
	for _, c := range []struct {
		a    config.Admission
		want string
	}{
		{config.Admission{ValidationInterval: 1}, "a look every 1 step(s)"},
		{config.Admission{ValidationInterval: 30, AllowRepeatedTasks: true}, "a look every 30 step(s), repeated pair tasks"},
		{config.Admission{ValidationInterval: 1, UndecidedWhenExhausted: true, Spending: config.SpendingAttainable},
			"a look every 1 step(s), exhausted comparisons end undecided, attainable spending"},
	} {
		if got := admissionSettings(c.a); got != c.want {
			t.Errorf("%+v: %q, want %q", c.a, got, c.want)
		}
	}
}

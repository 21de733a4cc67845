package comparisons

import (
	"testing"

	"github.com/evosteer/evosteer-go/internal/paper"
)

// TestEveryAblationHasAPaperRow: every ablation of the study has a Table 2 row to print beside it.
func TestEveryAblationHasAPaperRow(t *testing.T) {
	for _, v := range Variants() {
		if _, ok := paper.Table2[v.Name]; !ok && v.Ablation != "" {
			t.Errorf("ablation %s has no paper row", v.Name)
		}
	}
}

package learner

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/policy"
	"github.com/evosteer/evosteer-go/schema"
)

// The checkpoint table round-trips the learner bit for bit: every block's values and AdamW
// moments, the free-anchor task labels and the counters; writing it twice gives the same bytes.
func TestCheckpointRoundTripIsBitExact(t *testing.T) {
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Ablate("measured-flows"); err != nil { // exercise the labelled free-anchor block
		t.Fatal(err)
	}
	o := gpu.OptionsFromConfig(cfg, policy.StateWidth(len(cfg.Families)))
	l := gpu.NewLearner(o, []string{"t/b", "t/a"})
	for i, p := range l.Params() { // distinct values, moments and counters everywhere
		for j := range p.Value {
			p.Value[j] += float32(i+1) * 1e-3 * float32(j%7)
			if p.Trainable() {
				p.M[j], p.V[j] = float32(j%5)*1e-4, float32(j%3)*1e-6
			}
		}
	}
	l.PolicyVersion, l.ValueVersion, l.PolicyGroup.Step, l.ValueGroup.Step = 7, 7, 7, 350
	dir := t.TempDir()
	lin := schema.Lineage{Run: "t", Step: 7, Stage: layout.Update}
	a, b := filepath.Join(dir, "a.arrow"), filepath.Join(dir, "b.arrow")
	if err := Write(a, lin, l); err != nil {
		t.Fatal(err)
	}
	rows, err := schema.ReadFile[schema.CheckpointRow](schema.Checkpoint, a)
	if err != nil {
		t.Fatal(err)
	}
	m := gpu.NewLearner(o, []string{"t/a", "t/b"})
	if err := restore(m, rows); err != nil {
		t.Fatal(err)
	}
	for i, p := range m.Params() {
		q := l.Params()[i]
		if p.Name != q.Name || !slices.Equal(p.Value, q.Value) || !slices.Equal(p.M, q.M) || !slices.Equal(p.V, q.V) {
			t.Fatalf("block %s differs after the round trip", p.Name)
		}
	}
	if !slices.Equal(m.AnchorTasks, l.AnchorTasks) || m.PolicyVersion != 7 || m.ValueGroup.Step != 350 {
		t.Fatalf("labels %v, versions %d, value steps %d", m.AnchorTasks, m.PolicyVersion, m.ValueGroup.Step)
	}
	if err := Write(b, lin, m); err != nil {
		t.Fatal(err)
	}
	sa, _ := schema.SHA256File(a)
	sb, _ := schema.SHA256File(b)
	if sa != sb {
		t.Fatal("writing the restored learner gives other bytes")
	}
	// A damaged checkpoint is refused.
	rows[0].Dims = []int32{1}
	if err := restore(gpu.NewLearner(o, []string{"t/a", "t/b"}), rows); err == nil {
		t.Fatal("a block with wrong dimensions was accepted")
	}
}

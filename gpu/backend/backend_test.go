package backend

import (
	"strings"
	"testing"

	"github.com/gomlx/compute/gobackend"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

func TestSimplegoComputes(t *testing.T) {
	b, err := New("simplego")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Finalize()
	out, err := graph.CallOnce(b, func(x *graph.Node) *graph.Node { return graph.ReduceAllSum(graph.Mul(x, x)) }, []float32{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	if got := tensors.ToScalar[float32](out); got != 14 {
		t.Fatalf("sum of squares = %g, want 14", got)
	}
}

func TestAutoFallsBackToSimplego(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "")
	b, err := New("auto")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Finalize()
	// gomlx registers the pure-Go backend (simplego in the configuration) as "go".
	if s := b.String(); s != gobackend.BackendName && !strings.HasPrefix(s, "xla") {
		t.Fatalf("auto chose %q (%s)", s, b.Name())
	}
}

func TestUnknownOrMissingBackend(t *testing.T) {
	if _, err := New("cuda"); err == nil || !strings.Contains(err.Error(), "unknown gomlx backend") {
		t.Fatalf("unknown name: %v", err)
	}
	if _, err := New("xla"); err == nil || !strings.Contains(err.Error(), "-tags xla") {
		t.Fatalf("xla without the tag: %v", err)
	}
}

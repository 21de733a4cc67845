package gpu

import (
	"testing"

	"github.com/gomlx/compute"

	"github.com/evosteer/evosteer-go/gpu/backend"
)

// testBackend opens the simplego backend for a test and finalises it after.
func testBackend(t *testing.T) compute.Backend {
	t.Helper()
	b, err := backend.New("simplego")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Finalize)
	return b
}

//go:build xla

package backend

// The XLA backend (a PJRT plugin: CUDA on a GPU machine) is compiled in only with -tags xla.
import _ "github.com/gomlx/go-xla/compute/xla"

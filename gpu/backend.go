package gpu

import (
	"fmt"
	"os"
	"slices"

	"github.com/gomlx/gomlx/backends"
	// simplego is imported explicitly: backends/default would try to download an XLA plugin.
	"github.com/gomlx/gomlx/backends/simplego"
)

// registered maps configuration names to gomlx's registry names.
var registered = map[string]string{"simplego": simplego.BackendName, "xla": "xla"}

// NewBackend opens the gomlx backend the configuration names (compute.backend):
//   - "simplego": pure Go on the CPU, always available;
//   - "xla": XLA through a PJRT plugin, in builds with `-tags xla` (GPU when the plugin is CUDA);
//   - "auto": $GOMLX_BACKEND when set, else xla when it is compiled in and opens, else simplego.
func NewBackend(name string) (backends.Backend, error) {
	switch name {
	case "simplego", "xla":
		if !slices.Contains(backends.List(), registered[name]) {
			return nil, fmt.Errorf("gomlx backend %q is not compiled into this binary (available: %v); build with -tags xla for XLA", name, backends.List())
		}
		b, err := backends.NewWithConfig(registered[name])
		if err != nil {
			return nil, fmt.Errorf("open gomlx backend %q: %w", name, err)
		}
		return b, nil
	case "auto":
		if env := os.Getenv(backends.ConfigEnvVar); env != "" {
			b, err := backends.NewWithConfig(env)
			if err != nil {
				return nil, fmt.Errorf("open gomlx backend from $%s=%q: %w", backends.ConfigEnvVar, env, err)
			}
			return b, nil
		}
		if slices.Contains(backends.List(), "xla") {
			if b, err := backends.NewWithConfig("xla"); err == nil {
				return b, nil
			}
		}
		return NewBackend("simplego")
	default:
		return nil, fmt.Errorf("unknown gomlx backend %q (want auto, simplego or xla)", name)
	}
}

package backend

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/gomlx/compute"
	// The Go backend is imported explicitly: backends/default would also pull in XLA, which
	// downloads a PJRT plugin when none is installed.
	"github.com/gomlx/compute/gobackend"
)

// registered maps configuration names to gomlx's registry names. "simplego" is the name users
// configure for the pure-Go CPU backend: gomlx v0.28 moved it to github.com/gomlx/compute/gobackend
// and registers it as "go"; the configuration keeps the old name.
var registered = map[string]string{"simplego": gobackend.BackendName, "xla": "xla"}

// goBackendConfig runs the Go backend's ops one at a time (ops_sequential; each op still uses
// every core). With parallel op scheduling, gomlx v0.26.0's simplego deadlocked on graphs with
// several independent matmuls once its worker pool was full (each scheduled DotGeneral waited
// for a free worker from inside a worker; seen on 2 cores); v0.28's Go backend still schedules
// ops through the same WaitToStart, so the safe order stays.
//
// v0.26.0 was also given dotgeneral_small (one matmul kernel whatever the problem size, so a
// row's result did not depend on its batch); v0.28's Go backend has no such option (an unknown
// option is an error) and picks its small or large kernel by size. Nothing in the pipeline
// depends on it: on this backend the engine runs the plain-Go kernels (kernels.go), which are
// batch-invariant, and the graphs serve XLA.
const goBackendConfig = "ops_sequential"

// New opens the gomlx backend the configuration names (compute.backend):
//   - "simplego": pure Go on the CPU, always available (gomlx's Go backend, registered as "go");
//   - "xla": XLA through a PJRT plugin, in builds with `-tags xla` (GPU when the plugin is CUDA);
//     "xla:PLUGIN" names the plugin (xla:cuda, xla:cpu);
//   - "auto": $GOMLX_BACKEND when set, else xla when it is compiled in and opens, else simplego.
func New(name string) (compute.Backend, error) {
	if plugin, ok := strings.CutPrefix(name, "xla:"); ok && plugin != "" {
		// A named PJRT plugin, e.g. xla:cuda (pjrt_c_api_cuda_plugin.so under
		// $PJRT_PLUGIN_LIBRARY_PATH).
		if !slices.Contains(compute.List(), registered["xla"]) {
			return nil, fmt.Errorf("gomlx backend %q: XLA is not compiled into this binary (available: %v); build with -tags xla", name, compute.List())
		}
		b, err := compute.NewWithConfig(name)
		if err != nil {
			return nil, fmt.Errorf("open gomlx backend %q: %w", name, err)
		}
		return b, nil
	}
	switch name {
	case "simplego", "xla":
		if !slices.Contains(compute.List(), registered[name]) {
			return nil, fmt.Errorf("gomlx backend %q is not compiled into this binary (available: %v); build with -tags xla for XLA", name, compute.List())
		}
		cfg := registered[name]
		if name == "simplego" {
			cfg += ":" + goBackendConfig
		}
		b, err := compute.NewWithConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("open gomlx backend %q: %w", name, err)
		}
		return b, nil
	case "auto":
		if env := os.Getenv(compute.ConfigEnvVar); env != "" {
			b, err := compute.NewWithConfig(env)
			if err != nil {
				return nil, fmt.Errorf("open gomlx backend from $%s=%q: %w", compute.ConfigEnvVar, env, err)
			}
			return b, nil
		}
		if slices.Contains(compute.List(), "xla") {
			if b, err := compute.NewWithConfig("xla"); err == nil {
				return b, nil
			}
		}
		return New("simplego")
	default:
		return nil, fmt.Errorf("unknown gomlx backend %q (want auto, simplego or xla)", name)
	}
}

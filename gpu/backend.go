package gpu

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/backends"
	// simplego is imported explicitly: backends/default would try to download an XLA plugin.
	"github.com/gomlx/gomlx/backends/simplego"
)

// registered maps configuration names to gomlx's registry names.
var registered = map[string]string{"simplego": simplego.BackendName, "xla": "xla"}

// simplegoConfig fixes two simplego behaviours:
//   - ops_sequential runs the ops one at a time (each still uses every core). With the default
//     parallel op scheduling, gomlx v0.26.0's simplego deadlocks on graphs with several
//     independent matmuls once its worker pool is full: each scheduled DotGeneral waits for a
//     free worker from inside a worker (backends/simplego/dotgeneral_small.go WaitToStart).
//     Seen on 2 cores.
//   - dotgeneral_small always takes the same matmul kernel, whatever the problem size. The
//     default switches kernels with the size, which changes the summation order, so a decision
//     scored in a batch of 130 (a rollout wave) and in a batch of 256 (rescore) differed in the
//     last bits; with one kernel every row's result is independent of its batch, and rescore
//     reproduces the behaviour log-probabilities exactly. It costs about 40% of scoring speed
//     (BenchmarkPolicyNetScore).
const simplegoConfig = "ops_sequential,dotgeneral_small"

// NewBackend opens the gomlx backend the configuration names (compute.backend):
//   - "simplego": pure Go on the CPU, always available;
//   - "xla": XLA through a PJRT plugin, in builds with `-tags xla` (GPU when the plugin is CUDA);
//     "xla:PLUGIN" names the plugin (xla:cuda, xla:cpu);
//   - "auto": $GOMLX_BACKEND when set, else xla when it is compiled in and opens, else simplego.
func NewBackend(name string) (backends.Backend, error) {
	if plugin, ok := strings.CutPrefix(name, "xla:"); ok && plugin != "" {
		// A named PJRT plugin, e.g. xla:cuda (pjrt_c_api_cuda_plugin.so under
		// $PJRT_PLUGIN_LIBRARY_PATH).
		if !slices.Contains(backends.List(), registered["xla"]) {
			return nil, fmt.Errorf("gomlx backend %q: XLA is not compiled into this binary (available: %v); build with -tags xla", name, backends.List())
		}
		b, err := backends.NewWithConfig(name)
		if err != nil {
			return nil, fmt.Errorf("open gomlx backend %q: %w", name, err)
		}
		return b, nil
	}
	switch name {
	case "simplego", "xla":
		if !slices.Contains(backends.List(), registered[name]) {
			return nil, fmt.Errorf("gomlx backend %q is not compiled into this binary (available: %v); build with -tags xla for XLA", name, backends.List())
		}
		cfg := registered[name]
		if name == "simplego" {
			cfg += ":" + simplegoConfig
		}
		b, err := backends.NewWithConfig(cfg)
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

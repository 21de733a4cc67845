// Package evosteer holds the default pipeline configuration, embedded so that every binary
// carries the constants it was built with. The configuration logic lives in internal/config.
package evosteer

import _ "embed"

// PipelineYAML is the default configuration, pipeline.yaml at the repository root.
//
//go:embed pipeline.yaml
var PipelineYAML []byte

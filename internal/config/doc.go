// Package config loads and checks the pipeline configuration: the embedded pipeline.yaml with a
// user's file overlaid on it, strictly (unknown keys, wrong types, fractions for integers and
// out-of-range values fail with file, line and column; the sizes that drive work have upper
// bounds), and gives the resolved configuration a stable sha256. A file is one YAML document
// without anchors or aliases, refused from the parsed tree before decoding expands anything.
//
// It must not hold pipeline logic or defaults of its own: every constant lives in pipeline.yaml.
package config

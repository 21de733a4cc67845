// Package config loads and checks the pipeline configuration: the embedded pipeline.yaml with a
// user's file overlaid on it, strictly (unknown keys, wrong types and out-of-range values fail
// with file, line and column), and gives the resolved configuration a stable sha256.
//
// It must not hold pipeline logic or defaults of its own: every constant lives in pipeline.yaml.
package config

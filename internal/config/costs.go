package config

// Costs prices a run's model tokens for the report's costs section and sql/costs.sql
// (docs/LLM-EXECUTORS.md, "What a run cost"): dollars (or any currency) per million input and
// per million output tokens, the same for every role, the controller and the author. 0 and 0,
// the default, show no cost column. The block reads no file and changes no stage's output, so
// it is omitted from the canonical JSON (and run.yaml) at its default: configurations without
// prices keep their hash.
type Costs struct {
	InputPerMillion  float64 `yaml:"input_per_million,omitempty" json:"input_per_million,omitempty"`
	OutputPerMillion float64 `yaml:"output_per_million,omitempty" json:"output_per_million,omitempty"`
}

// Priced reports whether a price is set, i.e. whether a cost column is shown.
func (c Costs) Priced() bool { return c.InputPerMillion != 0 || c.OutputPerMillion != 0 }

// Cost is the price of tokensIn input and tokensOut output tokens.
func (c Costs) Cost(tokensIn, tokensOut int64) float64 {
	return (float64(tokensIn)*c.InputPerMillion + float64(tokensOut)*c.OutputPerMillion) / 1e6
}

// validateCosts checks that both prices are finite and not negative.
func (k *checker) validateCosts(c Costs) {
	k.nonNegative("costs.input_per_million", c.InputPerMillion)
	k.nonNegative("costs.output_per_million", c.OutputPerMillion)
}

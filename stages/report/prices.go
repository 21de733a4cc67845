package report

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/evosteer/evosteer-go/internal/config"
)

// ModelPrice is what a model's server charges, in dollars (or any currency) per million tokens.
// CachedInputPerMillion, when set, prices the input a scoring request repeats for every candidate
// after the first (CostRow.TokensCached: a server's prefix cache holds the shared prompt); unset,
// those tokens cost InputPerMillion like the rest.
type ModelPrice struct {
	InputPerMillion       float64  `yaml:"input_per_million" json:"input_per_million"`
	OutputPerMillion      float64  `yaml:"output_per_million" json:"output_per_million"`
	CachedInputPerMillion *float64 `yaml:"cached_input_per_million" json:"cached_input_per_million"`
}

// Cost is the price of a row's tokens.
func (p ModelPrice) Cost(r CostRow) float64 {
	cached := p.InputPerMillion
	if p.CachedInputPerMillion != nil {
		cached = *p.CachedInputPerMillion
	}
	return (float64(r.TokensIn-r.TokensCached)*p.InputPerMillion + float64(r.TokensCached)*cached + float64(r.TokensOut)*p.OutputPerMillion) / 1e6
}

func (p ModelPrice) priced() bool {
	return p.InputPerMillion != 0 || p.OutputPerMillion != 0 || (p.CachedInputPerMillion != nil && *p.CachedInputPerMillion != 0)
}

// Prices are the prices of a run's models: the top-level ModelPrice for any model Models does
// not name. A prices file (evosteer costs --prices) holds them as YAML or JSON:
//
//	input_per_million: 0.15        # any model not listed below
//	output_per_million: 0.6
//	models:
//	  Qwen/Qwen3-8B:
//	    input_per_million: 0.05
//	    output_per_million: 0.2
//	    cached_input_per_million: 0.01
//
// Without a file the run's costs block (pipeline.yaml costs:) prices every model alike.
type Prices struct {
	ModelPrice `yaml:",inline"`
	Models     map[string]ModelPrice `yaml:"models" json:"models"`
	Source     string                `yaml:"-" json:"-"` // where the prices come from, for captions
}

// PricesFromConfig are the prices of the costs block: the same for every model, no cached price.
func PricesFromConfig(c config.Costs) Prices {
	return Prices{ModelPrice: ModelPrice{InputPerMillion: c.InputPerMillion, OutputPerMillion: c.OutputPerMillion},
		Source: "the run's costs block (costs.input_per_million, costs.output_per_million)"}
}

// Priced reports whether any price is set.
func (p Prices) Priced() bool {
	if p.ModelPrice.priced() {
		return true
	}
	for _, m := range p.Models {
		if m.priced() {
			return true
		}
	}
	return false
}

// For is model's price.
func (p Prices) For(model string) ModelPrice {
	if m, ok := p.Models[model]; ok {
		return m
	}
	return p.ModelPrice
}

// ReadPrices reads a prices file. A key it does not know, a value that is not a number, or a
// price that is negative or not finite is refused with the file and the field named.
func ReadPrices(path string) (Prices, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Prices{}, fmt.Errorf("prices: %w", err)
	}
	var p Prices
	if len(bytes.TrimSpace(data)) == 0 {
		return p, fmt.Errorf("prices %s: empty file: it sets no price (input_per_million, output_per_million, models)", path)
	}
	if err := yaml.UnmarshalWithOptions(data, &p, yaml.Strict()); err != nil {
		return Prices{}, fmt.Errorf("prices %s: %s", path, strings.TrimSpace(yaml.FormatError(err, false, true)))
	}
	check := func(field string, v float64) error {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("prices %s: %s: must be >= 0 and finite, got %v", path, field, v)
		}
		return nil
	}
	checkModel := func(prefix string, m ModelPrice) error {
		if err := check(prefix+"input_per_million", m.InputPerMillion); err != nil {
			return err
		}
		if err := check(prefix+"output_per_million", m.OutputPerMillion); err != nil {
			return err
		}
		if m.CachedInputPerMillion != nil {
			return check(prefix+"cached_input_per_million", *m.CachedInputPerMillion)
		}
		return nil
	}
	if err := checkModel("", p.ModelPrice); err != nil {
		return Prices{}, err
	}
	names := make([]string, 0, len(p.Models))
	for name := range p.Models {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if strings.TrimSpace(name) == "" {
			return Prices{}, fmt.Errorf("prices %s: models: a model with an empty name", path)
		}
		if err := checkModel("models."+name+".", p.Models[name]); err != nil {
			return Prices{}, err
		}
	}
	p.Source = "prices file " + path
	return p, nil
}

package calibrate

import (
	"image/color"
	"slices"

	"gonum.org/v1/plot/vg"

	"github.com/evosteer/evosteer-go/internal/figure"
	"github.com/evosteer/evosteer-go/schema"
)

// Figure draws a fit report's check: every cell at its target (x) and the world's mean over the
// check runs (y), one colour per policy, with the diagonal where they agree. rows are a report's
// calibration_fit rows (ArrowRows, or fit.arrow read back); the PNG depends on them alone.
func Figure(rows []schema.CalibrationFitRow) ([]byte, error) {
	type key struct{ b, p string }
	sum, n, target := map[key]float64{}, map[key]float64{}, map[key]float64{}
	for _, r := range rows {
		if r.Source == "check" {
			k := key{r.Benchmark, r.Policy}
			sum[k] += r.Score
			n[k]++
			target[k] = r.Target
		}
	}
	colors := []color.Color{color.RGBA{0x7f, 0x7f, 0x7f, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff},
		color.RGBA{0x8c, 0x56, 0x4b, 0xff}, color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff}}
	var series []figure.Series
	for i, pol := range Policies {
		var benchmarks []string
		for k := range n {
			if k.p == pol {
				benchmarks = append(benchmarks, k.b)
			}
		}
		slices.Sort(benchmarks) // a fixed drawing order: the same bytes for the same rows
		s := figure.Series{Name: pol, Color: colors[i%len(colors)]}
		for _, b := range benchmarks {
			k := key{b, pol}
			s.Points = append(s.Points, figure.Point{X: target[k], Y: sum[k] / n[k]})
		}
		series = append(series, s)
	}
	return figure.Agreement("The calibrated world on its check against the paper's baselines", "paper, Table 2 (points)",
		"world, mean of the check runs (points)", "world = paper", 9*vg.Inch, 6*vg.Inch, series)
}

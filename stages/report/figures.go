package report

import (
	"bytes"
	"fmt"
	"github.com/evosteer/evosteer-go/internal/figure"
	"github.com/evosteer/evosteer-go/internal/paper"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Figure geometry: 9 in wide at 100 dpi gives 900-pixel images that fit a report column.
const (
	figWidth = 9 * vg.Inch
	figDPI   = 100
)

var (
	sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

	colTheta  = rgb(0x1f77b4)
	colRho    = rgb(0xff7f0e)
	colGreen  = rgb(0x2ca02c)
	colRed    = rgb(0xd62728)
	colGrey   = rgb(0x8c8c8c)
	colPurple = rgb(0x9467bd)
	colBrown  = rgb(0x8c564b)
	colPink   = rgb(0xe377c2)

	outcomeColors = [3]color.Color{colGreen, colGrey, colRed}
	// One colour per SkillEvents entry.
	skillEventColors = []color.Color{colTheta, colGreen, colRed, colPurple, colGrey, colBrown, colPink}

	dashed = []vg.Length{vg.Points(6), vg.Points(4)}
)

func rgb(v uint32) color.Color {
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

// newPlot is a plot with sans-serif text, a grid and the legend at the top left.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sans, 14)
	p.Title.Padding = vg.Points(8)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 12)
		a.Tick.Label.Font = font.From(sans, 11)
	}
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	p.Legend.TextStyle.Font = font.From(sans, 11)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(6), -vg.Points(4)
	p.Legend.Padding = vg.Points(2)
	p.Add(plotter.NewGrid())
	return p
}

// integerTicks labels whole numbers only (training steps).
var integerTicks = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(lo, hi) {
		if t.Label != "" && t.Value == math.Trunc(t.Value) {
			out = append(out, plot.Tick{Value: t.Value, Label: fmt.Sprintf("%d", int(t.Value))})
		}
	}
	if len(out) == 0 { // a range too short for a whole-number major tick
		for v := math.Ceil(lo); v <= hi; v++ {
			out = append(out, plot.Tick{Value: v, Label: fmt.Sprintf("%d", int(v))})
		}
	}
	return out
})

// legendRoom raises the top of the y axis by frac of its range, so that the legend, drawn at
// the top, sits above the data rather than on it; tick labels stop at the old top.
func legendRoom(p *plot.Plot, frac float64) {
	top := p.Y.Max
	p.Y.Max += frac * (p.Y.Max - p.Y.Min)
	inner := p.Y.Tick.Marker
	p.Y.Tick.Marker = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		var out []plot.Tick
		for _, t := range inner.Ticks(lo, hi) {
			if t.Value <= top+1e-9*(hi-lo) {
				out = append(out, t)
			}
		}
		return out
	})
}

// stepAxis spans the steps of x with a margin, so that the end points are not on the frame.
func stepAxis(p *plot.Plot, x []float64) {
	pad := max(0.25, 0.02*(x[len(x)-1]-x[0]))
	p.X.Min, p.X.Max = x[0]-pad, x[len(x)-1]+pad
}

// unitTicks label a [0, 1] axis in quarters.
var unitTicks = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "0"}, {Value: 0.25, Label: "0.25"},
	{Value: 0.5, Label: "0.5"}, {Value: 0.75, Label: "0.75"}, {Value: 1, Label: "1"}})

// series is one named line of a line plot; NaN points are left out.
type series struct {
	name   string
	x, y   []float64
	color  color.Color
	dashes []vg.Length
	step   bool // a step function: the value holds until the next point
}

// maxMarkers is the most points a line shows markers on.
const maxMarkers = 60

// addLines adds each series as a line with point markers and a legend entry.
func addLines(p *plot.Plot, ss ...series) error {
	for _, s := range ss {
		var xys plotter.XYs
		for i := range s.x {
			if !math.IsNaN(s.y[i]) {
				xys = append(xys, plotter.XY{X: s.x[i], Y: s.y[i]})
			}
		}
		if len(xys) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		l.Color, l.Width, l.Dashes = s.color, vg.Points(2), s.dashes
		if s.step {
			l.StepStyle = plotter.PostStep
		}
		pts.Color, pts.Radius, pts.Shape = s.color, vg.Points(2.5), draw.CircleGlyph{}
		if len(xys) > maxMarkers { // markers would blur a long run's curve
			p.Add(l)
			p.Legend.Add(s.name, l)
			continue
		}
		p.Add(l, pts)
		p.Legend.Add(s.name, l, pts)
	}
	return nil
}

// hline is a horizontal reference line across [x0, x1].
func hline(p *plot.Plot, name string, y, x0, x1 float64, c color.Color) error {
	l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: y}, {X: x1, Y: y}})
	if err != nil {
		return err
	}
	l.Color, l.Width, l.Dashes = c, vg.Points(1.5), dashed
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// renderPNG draws plots stacked vertically (x axes aligned) into one PNG.
func renderPNG(height vg.Length, plots ...*plot.Plot) ([]byte, error) {
	c := vgimg.NewWith(vgimg.UseWH(figWidth, height), vgimg.UseDPI(figDPI))
	dc := draw.New(c)
	if len(plots) == 1 {
		plots[0].Draw(dc)
	} else {
		grid := make([][]*plot.Plot, len(plots))
		for i, p := range plots {
			grid[i] = []*plot.Plot{p}
		}
		tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadY: vg.Points(12)}
		for i, cv := range plot.Align(grid, tiles, dc) {
			plots[i].Draw(cv[0])
		}
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func steps[T any](rows []T, step func(T) int) []float64 {
	out := make([]float64, len(rows))
	for i, r := range rows {
		out[i] = float64(step(r))
	}
	return out
}

func values[T any](rows []T, v func(T) float64) []float64 {
	out := make([]float64, len(rows))
	for i, r := range rows {
		out[i] = v(r)
	}
	return out
}

// rewardsFigure: above, the rolling means of π_θ's and ρ's rewards over RollingWindow steps,
// with the unhealthy fraction; below, the rolling mean of θ − ρ with a band of ±2 standard errors
// and the zero line.
func rewardsFigure(title string, rs []StepRewards) ([]byte, error) {
	gs := RollingGap(rs, RollingWindow)
	p := newPlot(title, "training step", "mean reward / fraction")
	p.X.Tick.Marker = integerTicks
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = unitTicks
	legendRoom(p, 0.3)
	x := steps(rs, func(r StepRewards) int { return r.Step })
	stepAxis(p, x)
	err := addLines(p,
		series{name: fmt.Sprintf("π_θ (current rollouts), mean of %d steps", RollingWindow), x: x, y: values(gs, func(g GapPoint) float64 { return g.Theta }), color: colTheta},
		series{name: fmt.Sprintf("ρ (natural reference rollouts), mean of %d steps", RollingWindow), x: x, y: values(gs, func(g GapPoint) float64 { return g.Rho }), color: colRho},
		series{name: "unhealthy episodes (all sources), per step", x: x, y: values(rs, func(r StepRewards) float64 { return r.Unhealthy }), color: colGrey, dashes: dashed},
	)
	if err != nil {
		return nil, err
	}
	gap := newPlot("", "training step", "θ − ρ (points)")
	gap.X.Tick.Marker = integerTicks
	stepAxis(gap, x)
	// The band starts once the window holds three steps: a standard error of two is noise.
	var band plotter.XYs
	lo, hi := 0.0, 0.0
	for i, g := range gs { // upper edge forwards, lower edge backwards
		if g.Steps >= 3 && !math.IsNaN(g.SE) {
			band = append(band, plotter.XY{X: x[i], Y: 100 * (g.Gap + 2*g.SE)})
			hi = max(hi, 100*(g.Gap+2*g.SE))
			lo = min(lo, 100*(g.Gap-2*g.SE))
		}
		if !math.IsNaN(g.Gap) {
			hi, lo = max(hi, 100*g.Gap), min(lo, 100*g.Gap)
		}
	}
	for i := len(gs) - 1; i >= 0; i-- {
		if g := gs[i]; g.Steps >= 3 && !math.IsNaN(g.SE) {
			band = append(band, plotter.XY{X: x[i], Y: 100 * (g.Gap - 2*g.SE)})
		}
	}
	gap.Y.Min, gap.Y.Max = lo-0.5, hi+0.5
	legendRoom(gap, 0.45)
	if len(band) >= 4 {
		poly, err := plotter.NewPolygon(band)
		if err != nil {
			return nil, err
		}
		poly.Color, poly.LineStyle.Width = color.NRGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0x40}, 0
		gap.Add(poly)
		gap.Legend.Add("±2 standard errors", poly)
	}
	if err := addLines(gap, series{name: fmt.Sprintf("θ − ρ, mean of %d steps", RollingWindow), x: x,
		y: values(gs, func(g GapPoint) float64 { return 100 * g.Gap }), color: colTheta}); err != nil {
		return nil, err
	}
	if err := hline(gap, "no difference", 0, x[0], x[len(x)-1], colGrey); err != nil {
		return nil, err
	}
	return renderPNG(6.5*vg.Inch, p, gap)
}

// lossFigure: the AnchorTB batch loss, with every Δℓ = 0, and at the anchor-only level.
func lossFigure(title string, ms []stepMetrics) ([]byte, error) {
	p := newPlot(title, "training step", "batch mean loss")
	p.X.Tick.Marker = integerTicks
	x := steps(ms, func(m stepMetrics) int { return m.Step })
	stepAxis(p, x)
	err := addLines(p,
		series{name: "loss", x: x, y: values(ms, func(m stepMetrics) float64 { return m.Loss }), color: colTheta},
		series{name: "loss_rho (every Δℓ = 0)", x: x, y: values(ms, func(m stepMetrics) float64 { return m.LossRho }), color: colRho, dashes: dashed},
		series{name: "loss_anchor (Δℓ = 0, b_ψ = 0: anchor-only level)", x: x, y: values(ms, func(m stepMetrics) float64 { return m.LossAnchor }), color: colGreen},
	)
	if err != nil {
		return nil, err
	}
	legendRoom(p, 0.35)
	return renderPNG(4*vg.Inch, p)
}

// aucFigure: cumulative anchor AUC of p̂ and of the family mean, against chance.
func aucFigure(title string, pts []AUCPoint) ([]byte, error) {
	p := newPlot(title, "training step (AUC over reference episodes of steps 2..k)", "AUC")
	p.X.Tick.Marker = integerTicks
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = unitTicks
	legendRoom(p, 0.3)
	x := steps(pts, func(a AUCPoint) int { return a.Step })
	stepAxis(p, x)
	err := addLines(p,
		series{name: "task anchor p_hat (leave-one-out)", x: x, y: values(pts, func(a AUCPoint) float64 { return a.PHat }), color: colTheta},
		series{name: "task-family mean m_category", x: x, y: values(pts, func(a AUCPoint) float64 { return a.Family }), color: colRho},
	)
	if err != nil {
		return nil, err
	}
	if err := hline(p, "chance (0.5)", 0.5, x[0], x[len(x)-1], colGrey); err != nil {
		return nil, err
	}
	return renderPNG(4*vg.Inch, p)
}

// editFigure: stacked shares of better / same / worse edits per action kind, one panel for the
// θ rollouts and one for the ρ rollouts; each tick label carries the number of edits.
func editFigure(title string, counts []EditCounts) ([]byte, error) {
	var plots []*plot.Plot
	for _, src := range []struct{ key, name string }{{SourceTheta, "π_θ (current rollouts)"}, {SourceRho, "ρ (natural reference rollouts)"}} {
		p := newPlot(title+": "+src.name, "", "share of edits (%)")
		p.Y.Min, p.Y.Max = 0, 100
		p.Y.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "0"}, {Value: 25, Label: "25"},
			{Value: 50, Label: "50"}, {Value: 75, Label: "75"}, {Value: 100, Label: "100"}})
		legendRoom(p, 0.3)
		p.Legend.Left = false
		var names []string
		shares := make([]plotter.Values, len(Outcomes))
		for _, c := range counts {
			if c.Source != src.key {
				continue
			}
			names = append(names, fmt.Sprintf("%s\nn = %d", c.Kind, c.Total()))
			for _, o := range Outcomes {
				share := 0.0
				if c.Total() > 0 {
					share = 100 * float64(c.N[o]) / float64(c.Total())
				}
				shares[o] = append(shares[o], share)
			}
		}
		var below *plotter.BarChart
		for _, o := range Outcomes {
			b, err := plotter.NewBarChart(shares[o], vg.Points(40))
			if err != nil {
				return nil, err
			}
			b.Color, b.LineStyle.Width = outcomeColors[o], 0
			if below != nil {
				b.StackOn(below)
			}
			below = b
			p.Add(b)
			p.Legend.Add(o.String(), b)
		}
		p.NominalX(names...)
		p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5 // whole labels at both ends
		plots = append(plots, p)
	}
	return renderPNG(7*vg.Inch, plots...)
}

// skillFigure: the admission events of each step (stacked bars) and the alpha spent, a step
// function, against the budget α.
func skillFigure(title string, tl []SkillStep, alpha float64) ([]byte, error) {
	events := newPlot(title+": ledger events per step", "", "events")
	events.X.Tick.Marker = integerTicks
	events.Legend.Left = false
	// Bars one step wide less a gap; the plot area is about 8 of the 9 inches.
	width := min(vg.Points(30), 8*vg.Inch/vg.Length(len(tl))*0.7)
	var below *plotter.BarChart
	entries := 0
	for j, name := range SkillEvents {
		vs := make(plotter.Values, len(tl))
		seen := false
		for i, s := range tl {
			vs[i] = float64(s.Events[j])
			seen = seen || s.Events[j] > 0
		}
		if !seen {
			continue
		}
		b, err := plotter.NewBarChart(vs, width)
		if err != nil {
			return nil, err
		}
		b.XMin, b.Color, b.LineStyle.Width = float64(tl[0].Step), skillEventColors[j], 0
		if below != nil {
			b.StackOn(below)
		}
		below = b
		events.Add(b)
		events.Legend.Add(name, b)
		entries++
	}
	events.Y.Min = 0
	legendRoom(events, 0.15+0.12*float64(entries))

	spent := newPlot(title+": alpha spent", "training step", "cumulative alpha spent")
	spent.X.Tick.Marker = integerTicks
	spent.Y.Min, spent.Y.Max = 0, alpha
	var ticks []plot.Tick
	for i := range 5 {
		v := alpha * float64(i) / 4
		ticks = append(ticks, plot.Tick{Value: v, Label: fmt.Sprintf("%.4g", v)})
	}
	spent.Y.Tick.Marker = plot.ConstantTicks(ticks)
	legendRoom(spent, 0.45)
	x := steps(tl, func(s SkillStep) int { return s.Step })
	if err := addLines(spent, series{name: "alpha spent", x: x, y: values(tl, func(s SkillStep) float64 { return s.AlphaSpent }), color: colTheta, step: true}); err != nil {
		return nil, err
	}
	if err := hline(spent, fmt.Sprintf("budget α = %g", alpha), alpha, x[0], x[len(x)-1], colRed); err != nil {
		return nil, err
	}
	stepAxis(spent, x)
	spent.X.Min, spent.X.Max = min(spent.X.Min, x[0]-0.5), max(spent.X.Max, x[len(x)-1]+0.5) // room for the bars
	events.X.Min, events.X.Max = spent.X.Min, spent.X.Max
	return renderPNG(6*vg.Inch, events, spent)
}

// simSuffix marks figure titles of runs on the simulated world.
func simSuffix(sim bool) string {
	if sim {
		return " (simulated world)"
	}
	return ""
}

// paperRow maps an evaluated policy to its row of the paper's Table 2 (evosteer is the full
// method).
func paperRow(policy string) string {
	if policy == "evosteer" {
		return paper.Full
	}
	return policy
}

// paperFigure: every (benchmark, policy) cell the paper measured, the paper's score against this
// run's, one colour per policy, with the diagonal where the two agree. It returns nil when no
// evaluated policy has a paper row.
func paperFigure(title string, t *EvalTable) ([]byte, error) {
	colors := []color.Color{colTheta, colRho, colGreen, colRed, colPurple, colBrown, colPink}
	var series []figure.Series
	for k, pol := range t.Policies {
		s := figure.Series{Name: pol, Color: colors[len(series)%len(colors)]}
		for _, b := range t.Blocks {
			for _, r := range b.Rows {
				if c := r.Cells[k]; c.Present {
					if v, ok := paper.Score(paperRow(pol), r.Benchmark); ok {
						s.Points = append(s.Points, figure.Point{X: v, Y: 100 * c.Mean})
					}
				}
			}
		}
		if len(s.Points) > 0 {
			series = append(series, s)
		}
	}
	return figure.Agreement(title, "paper, Table 2 (points)", "this run (points)", "this run = paper", figWidth, 5*vg.Inch, series)
}

package figure

import (
	"bytes"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Series is one named group of points, drawn in one colour.
type Series struct {
	Name   string
	Color  color.Color
	Points []Point
}

// Point is a reference value (x) and the measured one (y), in points.
type Point struct{ X, Y float64 }

// Agreement draws the series on [0, 100]² with the dashed diagonal "equal" and a legend; series
// without points are left out, and with none at all it returns nil. The bytes depend on the
// arguments alone.
func Agreement(title, xLabel, yLabel, equal string, width, height vg.Length, series []Series) ([]byte, error) {
	sans := font.Font{Typeface: "Liberation", Variant: "Sans"}
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sans, 14)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 12)
		a.Tick.Label.Font = font.From(sans, 11)
		a.Min, a.Max = 0, 100
	}
	p.Legend.TextStyle.Font = font.From(sans, 11)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(6), -vg.Points(4)
	p.Add(plotter.NewGrid())
	diag, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 100, Y: 100}})
	if err != nil {
		return nil, err
	}
	diag.Color, diag.Width, diag.Dashes = color.Gray{Y: 0x80}, vg.Points(1.5), []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(diag)
	p.Legend.Add(equal, diag)
	drawn := 0
	for _, s := range series {
		if len(s.Points) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(s.Points))
		for i, pt := range s.Points {
			xys[i] = plotter.XY{X: pt.X, Y: pt.Y}
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, err
		}
		sc.Color, sc.Radius, sc.Shape = s.Color, vg.Points(3.5), draw.CircleGlyph{}
		p.Add(sc)
		p.Legend.Add(s.Name, sc)
		drawn++
	}
	if drawn == 0 {
		return nil, nil
	}
	c := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(100))
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

//go:build duckdb_arrow

package main

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/schema"
	"github.com/evosteer/evosteer-go/stages/report"
)

// A small real run through the CLI (three steps of every stage, the author from step 2), then
// `evosteer report`: every figure is in index.html as an embedded PNG and in report.md as a
// link, with the simulated-world label; the evaluation section says to run eval until
// eval/results.arrow exists, then shows the table. The page is then rendered in headless
// Chromium where it is installed.
func TestReportCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	cfg := filepath.Join(t.TempDir(), "small.yaml")
	writeFile(t, cfg, "batch:\n  tasks: 6\ntasks:\n  train_per_family: 4\n  test_per_family: 2\nauthor:\n  start_step: 2\n  start_families: 2\n")
	if _, err := run(t, "", "init", "--run", dir, "--config", cfg); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"1", "2", "3"} {
		for _, stage := range []string{"rollout", "rescore", "aggregate", "update", "validate", "author"} {
			if out, err := run(t, "", stage, "--run", dir, "--step", s); err != nil {
				t.Fatalf("%s %s: %v\n%s", stage, s, err, out)
			}
		}
	}
	out, err := run(t, "", "report", "--run", dir)
	index := filepath.Join(dir, "report", report.HTMLFile)
	if err != nil || out != "report: "+index+" (7 sections, 5 figures; also report.md and the PNGs)\n" {
		t.Fatalf("report: %v\n%s", err, out)
	}
	html, md := readFile(t, index), readFile(t, filepath.Join(dir, "report", report.MarkdownFile))
	for _, id := range []string{report.IDRewards, report.IDLoss, report.IDAnchorAUC, report.IDEdits, report.IDSkills} {
		if !strings.Contains(html, `<section id="`+id+`">`+"\n<h2>") || !strings.Contains(md, "]("+id+".png)") {
			t.Errorf("figure %s missing from the report", id)
		}
		if _, err := os.Stat(filepath.Join(dir, "report", id+".png")); err != nil {
			t.Error(err)
		}
	}
	if n := strings.Count(html, `<img src="data:image/png;base64,`); n != 5 {
		t.Errorf("index.html embeds %d figures, want 5", n)
	}
	for _, want := range []string{report.SimNotice, "Step 3: π_θ", "Through step 3: AUC of p̂ 0.", "π_θ: ", "proposal",
		"Not evaluated yet (no eval/results.arrow)", `<section id="` + report.IDCosts + `">`, "<td class=\"l\">controller</td><td class=\"l\">reference_prior (no server)</td>"} {
		if !strings.Contains(html, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}

	// An evaluation file (the eval command is not written yet): the table replaces the note.
	r, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var rows []schema.EvalRow
	for i, s := range []float64{0.5, 0.7} {
		rows = append(rows, schema.EvalRow{Policy: "evosteer", Benchmark: r.Config.Families[0], Block: "iid", Run: int32(i), Score: s, ControllerCount: schema.ControllerCountEstimated})
	}
	if err := schema.WriteRows(schema.EvalResults, filepath.Join(dir, report.EvalFile), schema.Lineage{Run: r.Name, Stage: "eval"}, rows); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "", "report", "--run", dir); err != nil {
		t.Fatalf("report with eval: %v\n%s", err, out)
	}
	html = readFile(t, index)
	if !strings.Contains(html, `<td class="l">`+r.Config.Families[0]+"</td><td>60.00 ± 14.14</td>") || strings.Contains(html, "Not evaluated yet") {
		t.Errorf("index.html lacks the evaluation table")
	}

	t.Run("chromium", func(t *testing.T) { renderInChromium(t, index) })
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// renderInChromium screenshots the page in headless Chromium and checks that the embedded
// figures were decoded and drawn: the θ curve's blue and the edit chart's green appear in the
// screenshot, and so does the simulated-world banner's background.
func renderInChromium(t *testing.T, index string) {
	bin := ""
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Skip("no Chromium installed (apt-get install chromium): the report's page was not rendered")
	}
	shot := filepath.Join(t.TempDir(), "page.png")
	abs, err := filepath.Abs(index)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--no-first-run", "--disable-sync", "--user-data-dir="+t.TempDir(),
		"--screenshot="+shot, "--window-size=1400,4000", "file://"+abs)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, out)
	}
	f, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(f))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 1400 || b.Dy() != 4000 {
		t.Errorf("screenshot is %v, want 1400×4000", b)
	}
	for name, c := range map[string]color.RGBA{"θ curve blue": {0x1f, 0x77, 0xb4, 0xff}, "better green": {0x2c, 0xa0, 0x2c, 0xff}, "banner": {0xff, 0xf4, 0xd6, 0xff}} {
		if n := countNear(img, c); n < 200 {
			t.Errorf("%s (%v): %d pixels in the screenshot, want the figures drawn", name, c, n)
		}
	}
}

// countNear counts pixels within a few levels of c per channel (scaling blurs edges only).
func countNear(img image.Image, c color.RGBA) int {
	near := func(a uint32, b uint8) bool { d := int(a>>8) - int(b); return d > -6 && d < 6 }
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r, c.R) && near(g, c.G) && near(bl, c.B) {
				n++
			}
		}
	}
	return n
}

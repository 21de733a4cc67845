//go:build duckdb_arrow

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/evosteer/evosteer-go/internal/executor/scoring/fakeengine"
)

// syncBuffer is a bytes.Buffer safe for the fake engine's concurrent handlers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// billedRE reads the billed line of evosteer costs.
var billedRE = regexp.MustCompile(`billed: \$([0-9.]+) for (\d+) requests, (\d+) input tokens \((\d+) of them cached prompt\), (\d+) output tokens`)

// TestCostsMatchTheFakesBill: a run whose agents (executor.backend openai) and served ρ are the
// fake engine, which logs its own bill of every request; evosteer costs's billed total equals,
// to the cent, the fake's bill priced alike (per model, with a cached-prompt price), and its
// tokens equal the fake's but for the scorer's one-item preflight requests, which no table keeps (the
// doctor's chat, as untracked, is skipped).
func TestCostsMatchTheFakesBill(t *testing.T) {
	logBuf := &syncBuffer{}
	fake := fakeengine.NewSGLang(fakeengine.Model{Name: "fake/qwen"}, fakeengine.SGLangOptions{Log: fakeengine.NewRequestLog(logBuf)})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "served.yaml")
	writeFile(t, cfg, "batch:\n  tasks: 4\ntasks:\n  train_per_family: 8\n  test_per_family: 4\n"+
		"served_reference:\n  dialect: sglang\n  base_url: "+srv.URL+"\n  model: fake/qwen\n  api_key_env: \"\"\n"+
		"  template: qwen3\n  max_concurrency: 8\n  timeout_seconds: 30\n  outage_seconds: 5\n  cache_decisions: 1024\n"+
		"  rescore_sample: 0.25\n  drift_tolerance: 0.1\n"+
		"executor:\n  backend: openai\n  openai:\n    base_url: "+srv.URL+"/v1\n    model: fake/qwen\n    api_key_env: \"\"\n"+
		"    max_concurrency: 8\n    timeout_seconds: 30\n    outage_seconds: 5\n    backoff_seconds: 1\n    backoff_max_seconds: 2\n")
	runDir := filepath.Join(dir, "run")
	for _, args := range [][]string{{"init", "--run", runDir, "--config", cfg, "--tasks", "../../configs/demo-tasks.jsonl", "--skip-doctor"}, {"train", "--run", runDir, "--steps", "2", "--skip-doctor"}} {
		if out, err := run(t, "", args...); err != nil {
			t.Fatalf("%s: %v\n%s", args[0], err, out)
		}
	}
	const in, out, cached = 3.0, 12.0, 0.75 // $ per million tokens of fake/qwen
	prices := filepath.Join(dir, "prices.yaml")
	writeFile(t, prices, fmt.Sprintf("input_per_million: 100\noutput_per_million: 100\nmodels:\n  fake/qwen:\n    input_per_million: %g\n    output_per_million: %g\n    cached_input_per_million: %g\n", in, out, cached))
	// The fake's own bill.
	var bill float64
	var requests, tokIn, tokCached, tokOut, preflights int64
	for _, raw := range strings.Split(strings.TrimSpace(logBuf.String()), "\n") {
		var l fakeengine.LogLine
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatal(err)
		}
		c := int64(0)
		if l.Kind == "score" {
			c = int64((l.Items - 1) * l.PromptTokens)
		}
		bill += (float64(int64(l.BilledIn)-c)*in + float64(c)*cached + float64(l.BilledOut)*out) / 1e6
		if l.Kind == "score" && l.Items == 1 {
			preflights++
			continue
		}
		requests++
		tokIn += int64(l.BilledIn)
		tokCached += c
		tokOut += int64(l.BilledOut)
	}
	got, err := run(t, "", "costs", "--run", runDir, "--prices", prices)
	if err != nil {
		t.Fatalf("costs: %v\n%s", err, got)
	}
	m := billedRE.FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("no billed line:\n%s", got)
	}
	dollars, _ := strconv.ParseFloat(m[1], 64)
	n := func(i int) int64 { v, _ := strconv.ParseInt(m[i], 10, 64); return v }
	t.Logf("evosteer costs billed $%.4f; the fake billed $%.6f (%d requests, %d in, %d cached, %d out; %d preflights)\n%s", dollars, bill, requests, tokIn, tokCached, tokOut, preflights, got)
	if math.Round(dollars*100) != math.Round(bill*100) {
		t.Errorf("billed $%.4f, the fake's bill $%.6f: not the same to the cent", dollars, bill)
	}
	if n(2) != requests || n(3) != tokIn || n(4) != tokCached || n(5) != tokOut {
		t.Errorf("billed %s requests, %s in, %s cached, %s out; the fake (less %d preflights) %d, %d, %d, %d", m[2], m[3], m[4], m[5], preflights, requests, tokIn, tokCached, tokOut)
	}
	for _, want := range []string{" rescore ", " controller ", " solver "} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q row:\n%s", want, got)
		}
	}
	if strings.Contains(got, "not billed") {
		t.Errorf("a served run has a row no server billed:\n%s", got)
	}
}

// TestCostsPriorApart: on the simulated world with the prompt-only prior, no server billed
// anything: the controller's charge is printed apart, as not billed, and the billed total is 0.
func TestCostsPriorApart(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sim.yaml")
	writeFile(t, cfg, trainConfig+"costs:\n  input_per_million: 1\n  output_per_million: 2\n")
	runDir := filepath.Join(dir, "run")
	for _, args := range [][]string{{"init", "--run", runDir, "--config", cfg}, {"rollout", "--run", runDir, "--step", "1"}} {
		if out, err := run(t, "", args...); err != nil {
			t.Fatalf("%s: %v\n%s", args[0], err, out)
		}
	}
	got, err := run(t, "", "costs", "--run", runDir)
	if err != nil {
		t.Fatalf("costs: %v\n%s", err, got)
	}
	if !strings.Contains(got, "billed: $0.0000 for 0 requests") || !regexp.MustCompile(`not billed: controller \d+ requests, [1-9]\d* input`).MatchString(got) ||
		!strings.Contains(got, "reference_prior, no server") || !regexp.MustCompile(`(?m)^ +1 +controller +no server .* not billed\s*$`).MatchString(got) {
		t.Errorf("the prior's charge is not apart:\n%s", got)
	}
}

// TestCostsRefusesBadPrices: a prices file with a negative price, an unknown key or a string
// is refused naming the file and the field.
func TestCostsRefusesBadPrices(t *testing.T) {
	_, r := initDemo(t)
	dir := t.TempDir()
	for _, c := range []struct{ text, want string }{
		{"models:\n  m:\n    input_per_million: -1\n", "models.m.input_per_million: must be >= 0 and finite, got -1"},
		{"output_per_million: .nan\n", "output_per_million: must be >= 0 and finite"},
		{"input_per_milion: 1\n", "input_per_milion"},
		{"input_per_million: cheap\n", "input_per_million"},
		{"", "empty file"},
	} {
		path := filepath.Join(dir, "prices.yaml")
		writeFile(t, path, c.text)
		got, err := run(t, "", "costs", "--run", r.Dir, "--prices", path)
		if err == nil || !strings.Contains(err.Error(), "prices "+path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v (want the file and %q)\n%s", c.text, err, c.want, got)
		}
	}
}

package config

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// loadErr loads text from a file and returns the error text, failing the test when there is none
// or when it does not name the file and every wanted fragment.
func loadErr(t *testing.T, text string, want ...string) {
	t.Helper()
	path := write(t, text)
	_, err := Load(path)
	if err == nil {
		t.Fatalf("%q: want an error", text)
	}
	msg := err.Error()
	for _, w := range append([]string{path}, want...) {
		if !strings.Contains(msg, w) {
			t.Errorf("%q: error %q does not contain %q", text, msg, w)
		}
	}
}

func TestFractionForIntegerRefused(t *testing.T) {
	loadErr(t, "batch:\n  tasks: 1.5\n", ":2:10:", "batch.tasks", "1.5", "not a whole number")
	loadErr(t, "policy:\n  hidden: 64.25\n", ":2:11:", "policy.hidden", "not a whole number")
	loadErr(t, "seed: 0.5\n", ":1:7:", "seed", "not a whole number")
	loadErr(t, "batch:\n  tasks: \"1.5\"\n", ":2:10:", "batch.tasks", "is quoted")
	loadErr(t, "batch:\n  tasks: .inf\n", ":2:10:", "batch.tasks", "not a whole number")
	// A whole number written as a float changes nothing and is kept.
	c, err := Load(write(t, "budget:\n  tokens: 1e5\nbatch:\n  tasks: 16.0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Budget.Tokens != 100000 || c.Batch.Tasks != 16 {
		t.Fatalf("tokens %d tasks %d", c.Budget.Tokens, c.Batch.Tasks)
	}
}

// TestScalarsAreTypedAlike: a quoted number or boolean is refused the same way for every scalar
// type (the decoder would take "2.0" for a float and refuse "true" for a bool), and -0.0 is the
// same setting as 0, with the same sha256.
func TestScalarsAreTypedAlike(t *testing.T) {
	loadErr(t, "anchortb:\n  beta: \"2.0\"\n", ":2:9:", "anchortb.beta", `"2.0" is quoted`, "takes a number")
	loadErr(t, "steps: \"3\"\n", ":1:8:", "steps", `"3" is quoted`, "takes an integer")
	loadErr(t, "steps: '3'\n", ":1:8:", "steps", `'3' is quoted`)
	loadErr(t, "anchortb:\n  hard_anchor_root: \"true\"\n", ":2:21:", "anchortb.hard_anchor_root", `"true" is quoted`, "takes true or false")
	zero, err := Load(write(t, "anchortb:\n  beta: 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	negative, err := Load(write(t, "anchortb:\n  beta: -0.0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if zero.SHA256() != negative.SHA256() {
		t.Errorf("beta -0.0 hashes %s, beta 0 hashes %s", negative.SHA256(), zero.SHA256())
	}
}

func TestEmptyFileNamed(t *testing.T) {
	for _, text := range []string{"", "\n\n", "# only a comment\n# and another\n", "---\n"} {
		loadErr(t, text, "is empty", "sets no key")
	}
}

func TestSecondDocumentRefused(t *testing.T) {
	loadErr(t, "seed: 1\n---\nseed: 2\n", ":2:1:", "second YAML document", "one document")
	loadErr(t, "seed: 1\n---\n", "second YAML document")
}

func TestAnchorsAliasesMergeKeysRefused(t *testing.T) {
	loadErr(t, "batch: &b\n  tasks: 8\n", ":1:8:", "anchor", "may not use anchors")
	loadErr(t, "families: [hotpotqa]\nood_families:\n  x: &f hotpotqa\n  y: *f\n", "anchor")
	loadErr(t, "batch:\n  <<: {tasks: 8}\n", ":2:3:", "merge key")
}

// bomb is a billion-laughs document: levels lists of nine aliases of the list above, expanding to
// 9^levels strings when decoded.
func bomb(levels int) string {
	var b strings.Builder
	b.WriteString("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < levels; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 9), ", "))
	}
	return b.String()
}

func TestAliasBombRefusedBeforeExpansion(t *testing.T) {
	start := time.Now()
	loadErr(t, bomb(9), ":1:5:", "anchor")
	// Refused from the parsed tree: microseconds. Expanding it took minutes and gigabytes.
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("refusing the bomb took %v", d)
	}
}

func TestWorkSizesBounded(t *testing.T) {
	loadErr(t, "batch:\n  tasks: 100000000000\n", ":2:10:", "batch.tasks", "must be <= 4096", "the paper uses 32", "got 100000000000")
	loadErr(t, "steps: 1000000\n", ":1:8:", "steps", "must be <= 100000", "step folder")
	loadErr(t, "batch:\n  current_rollouts: 1000\n", "batch.current_rollouts", "must be <= 64")
	loadErr(t, "budget:\n  tokens: 1e12\n", "budget.tokens", "must be <= 10000000")
	loadErr(t, "policy:\n  hidden: 100000\n", "policy.hidden", "must be <= 4096", "square of its width")
	loadErr(t, "tasks:\n  test_per_family: 5000000\n", "tasks.test_per_family", "must be <= 100000")
	loadErr(t, "sim:\n  env_max_steps: 10000000\n", "sim.env_max_steps", "must be <= 100000")
	// The bounds themselves are accepted.
	if _, err := Load(write(t, "steps: 100000\nbatch:\n  tasks: 4096\n  current_rollouts: 64\n")); err != nil {
		t.Fatal(err)
	}
}

// TestNullValuesRefused: an empty value, ~ and null are YAML nulls, which the decoder reads as
// "leave the default" — "seed: ~" would hash as the default configuration. Each is refused at its
// line and column with the key's path, at any depth, in a list and as a key.
func TestNullValuesRefused(t *testing.T) {
	def, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		want []string
	}{
		{"batch:\n  tasks:\n", []string{":2:9:", "batch.tasks: empty value (give a value or remove the key)"}},
		{"seed: 3\nbatch:\n  tasks:\nsteps: 4\n", []string{":3:9:", "batch.tasks: empty value"}},
		{"seed: ~\n", []string{":1:7:", `seed: null value "~"`, "remove the key"}},
		{"batch: null\n", []string{":1:8:", `batch: null value "null"`}},
		{"anchortb:\n  beta:\n", []string{":2:8:", "anchortb.beta: empty value"}},
		{"anchortb:\n  beta:   # the default, I thought\n", []string{":2:8:", "anchortb.beta: empty value"}},
		{"seed:\n", []string{":1:6:", "seed: empty value"}},
		{"tasks:\n  pilot: ~\n", []string{":2:10:", "tasks.pilot: null value"}},
		{"served_reference:\n", []string{":1:18:", "served_reference: empty value"}},
		{"sim:\n  families:\n    medqa:\n      kappa: NULL\n", []string{":4:14:", `sim.families.medqa.kappa: null value "NULL"`}},
		{"families: [hotpotqa, ~]\n", []string{":1:22:", `families[1]: null list entry "~"`}},
		{"families:\n  - hotpotqa\n  -\n", []string{":3:4:", "families[1]: empty list entry"}},
		{"ood_families:\n  ~: hotpotqa\n", []string{":2:3:", `ood_families: null key "~"`}},
		{"seed: !!null\n", []string{":1:6:", "seed: empty value"}},
		{"batch: {tasks: }\n", []string{":1:15:", "batch.tasks: empty value"}},
		// The documented nulls take executor.openai's value only when written out.
		{"author:\n  send_seed:\n", []string{":2:13:", "author.send_seed: empty value", "write null to take executor.openai.send_seed"}},
	} {
		path := write(t, c.text)
		_, err := Load(path)
		if err == nil {
			t.Errorf("%q: loaded; want it refused", c.text)
			continue
		}
		for _, w := range append([]string{path + c.want[0]}, c.want[1:]...) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q does not contain %q", c.text, err, w)
			}
		}
	}
	// author.send_seed and author.disable_thinking: null (docs/LLM-EXECUTORS.md) is their default,
	// executor.openai's value, and keeps the default's hash.
	for _, text := range []string{"author:\n  send_seed: null\n  disable_thinking: null\n", "author:\n  send_seed: ~\n"} {
		c, err := Load(write(t, text))
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if c.Author.SendSeed != nil || c.Author.DisableThinking != nil || c.SHA256() != def.SHA256() {
			t.Errorf("%q: send_seed %v disable_thinking %v, hash %s (default %s)", text, c.Author.SendSeed, c.Author.DisableThinking, c.SHA256(), def.SHA256())
		}
	}
}

// TestShippedConfigsLoad: the built-in default (which writes author.send_seed and
// disable_thinking as null) and every configuration under configs/ load, and each one's resolved
// YAML, the form run.yaml and `evosteer config` write, parses back to the same hash.
func TestShippedConfigsLoad(t *testing.T) {
	def, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "configs", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no configs/*.yaml (%v)", err)
	}
	cfgs := map[string]*Config{"pipeline.yaml": def}
	for _, f := range files {
		c, err := Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		cfgs[filepath.Base(f)] = c
	}
	for name, c := range cfgs {
		back, err := Parse(name+" (resolved)", c.YAML())
		if err != nil {
			t.Errorf("%s: resolved YAML does not parse: %v", name, err)
		} else if back.SHA256() != c.SHA256() {
			t.Errorf("%s: resolved YAML hashes %s, the file %s", name, back.SHA256(), c.SHA256())
		}
		t.Logf("%s %s", name, c.SHA256())
	}
}

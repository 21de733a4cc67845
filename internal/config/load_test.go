package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHugeOrDeepFilesAreRefusedBeforeParsing: a file over MaxFileBytes (an endless one too),
// 100,000 nested brackets and runaway indentation are refused with the file, the limit and, for
// nesting, the line and column, before the YAML parser sees them.
func TestHugeOrDeepFilesAreRefusedBeforeParsing(t *testing.T) {
	dir := t.TempDir()
	keys := strings.Builder{}
	keys.WriteString("sim:\n  families:\n")
	for i := 0; keys.Len() <= MaxFileBytes; i++ {
		fmt.Fprintf(&keys, "    k%d: 1\n", i)
	}
	deepIndent := strings.Builder{}
	for i := range 40 {
		deepIndent.WriteString(strings.Repeat("  ", i) + fmt.Sprintf("k%d:\n", i))
	}
	for _, c := range []struct {
		name, text, want string
	}{
		{"many keys", keys.String(), "larger than 256 KiB"},
		{"nested brackets", "steps: " + strings.Repeat("[", 100_000), ":1:40: nested deeper than 32 levels"},
		{"nested braces in a list", "families: [{a: [{b: " + strings.Repeat("{", 40), "nested deeper than 32 levels"},
		{"deep indentation", deepIndent.String(), ":34:65: indented deeper than 32 levels"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".yaml")
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming %s and %q", c.name, err, path, c.want)
		}
	}
	if _, err := Load("/dev/zero"); err == nil || !strings.Contains(err.Error(), "larger than 256 KiB") {
		t.Errorf("/dev/zero: %v", err)
	}
	// Brackets in quotes and comments are text, not nesting.
	ok := "# " + strings.Repeat("[", 50) + "\nexecutor:\n  openai:\n    model: \"" + strings.Repeat("{", 50) + "\"\n"
	if err := checkShape("ok.yaml", []byte(ok)); err != nil {
		t.Errorf("quoted and commented brackets: %v", err)
	}
}

// TestLearningRatesAreBounded: a learning rate that would make weights infinite (1e308) is
// refused with the key, before any update writes a checkpoint no reader accepts.
func TestLearningRatesAreBounded(t *testing.T) {
	for _, key := range []string{"adapter_lr", "heads_lr", "residual_lr"} {
		loadErr(t, "optimizer:\n  "+key+": 1e308\n", "optimizer."+key, "must be in (0, 10]")
	}
	loadErr(t, "comparison:\n  log_z_lr: 11\n", "comparison.log_z_lr", "must be in (0, 10]")
}

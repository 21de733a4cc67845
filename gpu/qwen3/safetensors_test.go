package qwen3_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/gpu/qwen3"
)

// rawFile writes a safetensors file of the given header text and a buffer of n bytes.
func rawFile(t *testing.T, header string, n int) string {
	t.Helper()
	var b bytes.Buffer
	_ = binary.Write(&b, binary.LittleEndian, uint64(len(header)))
	b.WriteString(header)
	b.Write(make([]byte, n))
	path := filepath.Join(t.TempDir(), "x.safetensors")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Writing is deterministic and reads back: BF16 and F16 round, F32 is exact; the header is padded
// to 8 bytes and carries the metadata.
func TestSafetensorsRoundTrip(t *testing.T) {
	tensors := map[string]qwen3.Tensor{
		"b.weight": {Shape: []int{2, 3}, Data: []float32{1, -2, 0.5, 1.0 / 3, 1e-3, 65504}},
		"a":        {Shape: []int{1}, Data: []float32{3.25}},
		"scalar":   {Shape: []int{}, Data: []float32{7}},
		"empty":    {Shape: []int{0, 4}, Data: []float32{}},
	}
	meta := map[string]string{"format": "pt"}
	for _, dtype := range []qwen3.DType{qwen3.F32, qwen3.BF16, qwen3.F16} {
		dir := t.TempDir()
		p1, p2 := filepath.Join(dir, "1.safetensors"), filepath.Join(dir, "2.safetensors")
		for _, p := range []string{p1, p2} {
			if err := qwen3.WriteSafetensors(p, tensors, dtype, meta); err != nil {
				t.Fatal(err)
			}
		}
		b1, _ := os.ReadFile(p1)
		b2, _ := os.ReadFile(p2)
		if !bytes.Equal(b1, b2) {
			t.Errorf("%s: two writes differ", dtype)
		}
		if n := binary.LittleEndian.Uint64(b1); n%8 != 0 || !bytes.HasPrefix(b1[8:], []byte(`{"__metadata__":{"format":"pt"},"a":{"dtype":"`+string(dtype)+`","shape":[1],"data_offsets":[0,`)) {
			t.Errorf("%s: header %q", dtype, b1[8:8+n])
		}
		got, gotMeta, err := qwen3.ReadSafetensors(p1)
		if err != nil {
			t.Fatal(err)
		}
		if gotMeta["format"] != "pt" || len(got) != len(tensors) {
			t.Errorf("%s: read %d tensors, metadata %v", dtype, len(got), gotMeta)
		}
		for name, want := range tensors {
			g := got[name]
			if !slices.Equal(g.Shape, want.Shape) || len(g.Data) != len(want.Data) {
				t.Fatalf("%s: %s: %v", dtype, name, g)
			}
			for i, v := range want.Data {
				tol := map[qwen3.DType]float32{qwen3.F32: 0, qwen3.BF16: 1.0 / 256, qwen3.F16: 1.0 / 2048}[dtype]
				if d := g.Data[i] - v; d > tol*abs(v) || -d > tol*abs(v) {
					t.Errorf("%s: %s[%d] = %v, wrote %v", dtype, name, i, g.Data[i], v)
				}
			}
		}
	}
}

func abs(v float32) float32 { return max(v, -v) }

// Each kind of bad file is one error naming the file, the tensor or field, and what is wrong.
func TestSafetensorsBadInput(t *testing.T) {
	f32 := func(name string, shape string, begin, end int) string {
		return `"` + name + `":{"dtype":"F32","shape":` + shape + `,"data_offsets":[` + strconv.Itoa(begin) + `,` + strconv.Itoa(end) + `]}`
	}
	for _, c := range []struct {
		what, header string
		n            int
		want         string
	}{
		{"header not JSON", `{"a": nope}`, 0, `header: "a": not JSON: invalid character`},
		{"header cut short", `{"a": {"dtype"`, 0, "header: "},
		{"header not an object", `[1, 2]`, 0, "header: does not start with '{'"},
		{"trailing data", `{} {}`, 0, "header: not JSON: 3 bytes follow the object"},
		{"overlap", `{` + f32("a", "[2]", 0, 8) + `,` + f32("b", "[2]", 4, 12) + `}`, 12, "b: data_offsets: [4, 12] overlaps a (which ends at 8)"},
		{"out of range", `{` + f32("a", "[2]", 0, 8) + `}`, 4, "a: data_offsets: [0, 8] is out of range (the buffer has 4 bytes)"},
		{"hole", `{` + f32("a", "[1]", 0, 4) + `,` + f32("b", "[1]", 8, 12) + `}`, 12, "b: data_offsets: [8, 12] leaves the bytes [4, 8) unindexed"},
		{"buffer not covered", `{` + f32("a", "[1]", 0, 4) + `}`, 8, "the tensors end at 4 but the buffer has 8 bytes"},
		{"size mismatch", `{` + f32("a", "[3]", 0, 8) + `}`, 8, "a: data_offsets: [0, 8] hold 8 bytes, but dtype F32 and shape [3] need 12"},
		{"reversed offsets", `{` + f32("a", "[0]", 8, 4) + `}`, 8, "a: data_offsets: [8, 4] is not an interval"},
		{"duplicate key", `{` + f32("a", "[1]", 0, 4) + `,` + f32("a", "[1]", 0, 4) + `}`, 4, `header: "a": the key appears twice`},
		{"dtype not implemented", `{"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}`, 8, `a: dtype: "I64" is not implemented`},
		{"unknown field", `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}}`, 4, `a: json: unknown field "x"`},
		{"missing shape", `{"a":{"dtype":"F32","data_offsets":[0,4]}}`, 4, "a: shape: absent"},
		{"negative dimension", `{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, 4, "a: shape: [-1] has a negative"},
		{"metadata not strings", `{"__metadata__":{"n":1}}`, 0, "__metadata__: is not an object of strings"},
	} {
		path := rawFile(t, c.header, c.n)
		_, _, err := qwen3.ReadSafetensors(path)
		if err == nil || !strings.Contains(err.Error(), path+": ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming the file and saying %q", c.what, err, c.want)
		}
	}
	// The length itself: past the file, and a file shorter than the length field.
	path := filepath.Join(t.TempDir(), "x.safetensors")
	_ = os.WriteFile(path, binary.LittleEndian.AppendUint64(nil, 1000), 0o644)
	if _, _, err := qwen3.ReadSafetensors(path); err == nil || !strings.Contains(err.Error(), path+": header length: 1000 is past the file's end (0 bytes after the length)") {
		t.Errorf("header length past the file: %v", err)
	}
	_ = os.WriteFile(path, []byte{1, 2}, 0o644)
	if _, _, err := qwen3.ReadSafetensors(path); err == nil || !strings.Contains(err.Error(), "header length: the file has 2 bytes") {
		t.Errorf("a 2-byte file: %v", err)
	}
	// Space padding after the object is allowed (the Rust library pads to 8 bytes).
	if _, _, err := qwen3.ReadSafetensors(rawFile(t, `{`+f32("a", "[1]", 0, 4)+`}   `, 4)); err != nil {
		t.Errorf("padded header: %v", err)
	}
}

package qwen3

// The safetensors format (the huggingface/safetensors README and docs/safetensors.schema.json):
// an 8-byte little-endian header length N, N bytes of a JSON object (starting with '{', maybe
// padded with spaces) mapping each tensor's name to {dtype, shape, data_offsets: [begin, end]}
// relative to the byte buffer that follows, plus an optional "__metadata__" of string values;
// duplicate keys are disallowed and the offsets must index the whole buffer without holes.
//
// It is hand-written rather than github.com/nlpodyssey/safetensors: that package decodes the
// header with encoding/json into a map (a duplicate key silently wins), and its errors ("metadata
// incomplete buffer", "invalid header deserialization") name neither the file nor the tensor nor
// which offsets disagree; the reader here is ~200 lines and every refusal names all three.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"unicode/utf8"

	"github.com/evosteer/evosteer-go/internal/atomicfile"
	"github.com/evosteer/evosteer-go/internal/mapfile"
)

// DType is a tensor's element type in a safetensors file.
type DType string

// The dtypes read (widened to float32) and written.
const (
	BF16 DType = "BF16"
	F16  DType = "F16"
	F32  DType = "F32"
)

// Size is the bytes of one element (0 for a dtype not implemented).
func (d DType) Size() int {
	switch d {
	case BF16, F16:
		return 2
	case F32:
		return 4
	}
	return 0
}

// torchName is the dtype's name in config.json's torch_dtype.
func (d DType) torchName() string {
	return map[DType]string{BF16: "bfloat16", F16: "float16", F32: "float32"}[d]
}

// maxHeader is the largest header read (the Rust library's bound, 100 MB).
const maxHeader = 100_000_000

// metadataKey is the header's reserved key.
const metadataKey = "__metadata__"

// stEntry is one tensor of a header.
type stEntry struct {
	Name       string
	DType      DType
	Shape      []int
	Begin, End int64
}

// stFile is an open safetensors file: the mapping, its header and its byte buffer.
type stFile struct {
	path     string
	entries  map[string]stEntry
	names    []string // sorted
	metadata map[string]string
	buf      []byte
	unmap    func() error
}

// openSafetensors maps path and validates its header against the file.
func openSafetensors(path string) (*stFile, error) {
	data, unmap, err := mapfile.Map(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) { // "qwen3: p: no such file", not "qwen3: p: open p: …"
			err = pe.Err
		}
		return nil, fmt.Errorf("qwen3: %s: %w", path, err)
	}
	f, err := parseSafetensors(path, data)
	if err != nil {
		_ = unmap()
		return nil, err
	}
	f.unmap = unmap
	return f, nil
}

func (f *stFile) Close() error {
	if f.unmap == nil {
		return nil
	}
	err := f.unmap()
	f.unmap, f.buf = nil, nil
	return err
}

// parseSafetensors validates data (the bytes of the file path) and indexes its tensors.
func parseSafetensors(path string, data []byte) (*stFile, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("qwen3: %s: %s", path, fmt.Sprintf(format, args...))
	}
	if len(data) < 8 {
		return nil, bad("header length: the file has %d bytes, fewer than the 8 of the length", len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	if n > uint64(len(data)-8) {
		return nil, bad("header length: %d is past the file's end (%d bytes after the length)", n, len(data)-8)
	}
	if n > maxHeader {
		return nil, bad("header length: %d is past the %d bytes a header may have", n, maxHeader)
	}
	header := data[8 : 8+n]
	if len(header) == 0 || header[0] != '{' {
		return nil, bad("header: does not start with '{' (not JSON)")
	}
	if !utf8.Valid(header) {
		return nil, bad("header: is not UTF-8")
	}
	f := &stFile{path: path, entries: map[string]stEntry{}, buf: data[8+n:]}
	if err := f.decodeHeader(header); err != nil {
		return nil, bad("header: %v", err)
	}
	return f, f.checkOffsets()
}

// decodeHeader reads the header's keys in order, refusing duplicates and trailing data.
func (f *stFile) decodeHeader(header []byte) error {
	dec := json.NewDecoder(bytes.NewReader(header))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("not JSON: %v", err)
		}
		name := tok.(string) // an object's keys are strings
		if seen[name] {
			return fmt.Errorf("%q: the key appears twice", name)
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("%q: not JSON: %v", name, err)
		}
		if name == metadataKey {
			if err := strictDecode(raw, &f.metadata); err != nil {
				return fmt.Errorf("%s: is not an object of strings: %v", metadataKey, err)
			}
			continue
		}
		e, err := decodeEntry(name, raw)
		if err != nil {
			return err
		}
		f.entries[name] = e
		f.names = append(f.names, name)
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	if rest := header[dec.InputOffset():]; len(bytes.Trim(rest, " \t\r\n")) != 0 {
		return fmt.Errorf("not JSON: %d bytes follow the object", len(rest))
	}
	slices.Sort(f.names)
	return nil
}

func strictDecode(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// decodeEntry checks one tensor's dtype, shape and offsets against each other.
func decodeEntry(name string, raw json.RawMessage) (stEntry, error) {
	var h struct {
		DType       *string  `json:"dtype"`
		Shape       *[]int64 `json:"shape"`
		DataOffsets *[]int64 `json:"data_offsets"`
	}
	if err := strictDecode(raw, &h); err != nil {
		return stEntry{}, fmt.Errorf("%s: %v", name, err)
	}
	switch {
	case h.DType == nil:
		return stEntry{}, fmt.Errorf("%s: dtype: absent", name)
	case h.Shape == nil:
		return stEntry{}, fmt.Errorf("%s: shape: absent", name)
	case h.DataOffsets == nil:
		return stEntry{}, fmt.Errorf("%s: data_offsets: absent", name)
	case len(*h.DataOffsets) != 2:
		return stEntry{}, fmt.Errorf("%s: data_offsets: %v is not [begin, end]", name, *h.DataOffsets)
	}
	e := stEntry{Name: name, DType: DType(*h.DType), Begin: (*h.DataOffsets)[0], End: (*h.DataOffsets)[1]}
	if e.DType.Size() == 0 {
		return stEntry{}, fmt.Errorf("%s: dtype: %q is not implemented (BF16, F16, F32)", name, e.DType)
	}
	if e.Begin < 0 || e.End < e.Begin {
		return stEntry{}, fmt.Errorf("%s: data_offsets: [%d, %d] is not an interval", name, e.Begin, e.End)
	}
	var s sat
	elems := int64(1)
	for _, d := range *h.Shape {
		if d < 0 || int64(int(d)) != d {
			return stEntry{}, fmt.Errorf("%s: shape: %v has a negative or oversized dimension", name, *h.Shape)
		}
		elems = s.mul(elems, d)
		e.Shape = append(e.Shape, int(d))
	}
	if nbytes := s.mul(elems, int64(e.DType.Size())); s.ovf || nbytes != e.End-e.Begin {
		return stEntry{}, fmt.Errorf("%s: data_offsets: [%d, %d] hold %d bytes, but dtype %s and shape %v need %d",
			name, e.Begin, e.End, e.End-e.Begin, e.DType, e.Shape, nbytes)
	}
	return e, nil
}

// checkOffsets requires the tensors to index the byte buffer exactly: in order of offset, each
// begins where the previous ends, the first at 0 and the last at the buffer's end.
func (f *stFile) checkOffsets() error {
	byOffset := make([]stEntry, 0, len(f.entries))
	for _, name := range f.names {
		e := f.entries[name]
		if e.End > int64(len(f.buf)) {
			return fmt.Errorf("qwen3: %s: %s: data_offsets: [%d, %d] is out of range (the buffer has %d bytes)", f.path, name, e.Begin, e.End, len(f.buf))
		}
		byOffset = append(byOffset, e)
	}
	slices.SortStableFunc(byOffset, func(a, b stEntry) int {
		if a.Begin != b.Begin {
			return cmpInt64(a.Begin, b.Begin)
		}
		return cmpInt64(a.End, b.End)
	})
	at, prev := int64(0), ""
	for _, e := range byOffset {
		switch {
		case e.Begin < at:
			return fmt.Errorf("qwen3: %s: %s: data_offsets: [%d, %d] overlaps %s (which ends at %d)", f.path, e.Name, e.Begin, e.End, prev, at)
		case e.Begin > at:
			return fmt.Errorf("qwen3: %s: %s: data_offsets: [%d, %d] leaves the bytes [%d, %d) unindexed (a hole)", f.path, e.Name, e.Begin, e.End, at, e.Begin)
		}
		at, prev = e.End, e.Name
	}
	if at != int64(len(f.buf)) {
		return fmt.Errorf("qwen3: %s: data_offsets: the tensors end at %d but the buffer has %d bytes (they must cover it exactly)", f.path, at, len(f.buf))
	}
	return nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// tensor widens the named tensor to float32.
func (f *stFile) tensor(name string) Tensor {
	e := f.entries[name]
	raw := f.buf[e.Begin:e.End]
	t := Tensor{Shape: slices.Clone(e.Shape), Data: make([]float32, int(e.End-e.Begin)/e.DType.Size())}
	if t.Shape == nil {
		t.Shape = []int{}
	}
	decode(t.Data, raw, e.DType)
	return t
}

func decode(dst []float32, raw []byte, d DType) {
	switch d {
	case BF16:
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(raw[2*i:])) << 16)
		}
	case F16:
		for i := range dst {
			dst[i] = f16ToF32(binary.LittleEndian.Uint16(raw[2*i:]))
		}
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	}
}

func encode(dst []byte, src []float32, d DType) []byte {
	for _, v := range src {
		switch d {
		case BF16:
			dst = binary.LittleEndian.AppendUint16(dst, f32ToBF16(v))
		case F16:
			dst = binary.LittleEndian.AppendUint16(dst, f32ToF16(v))
		case F32:
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
		}
	}
	return dst
}

// f32ToBF16 rounds to nearest, ties to even (as torch's .to(torch.bfloat16)); NaN stays NaN.
func f32ToBF16(v float32) uint16 {
	b := math.Float32bits(v)
	if v != v {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// f16ToF32 widens an IEEE half exactly.
func f16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf, NaN
		return math.Float32frombits(sign | 0xff<<23 | man<<13)
	case exp == 0 && man == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: man × 2^-24
		v := float32(man) / (1 << 24)
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
}

// f32ToF16 rounds to the nearest half, ties to even; overflow is ±inf.
func f32ToF16(v float32) uint16 {
	b := math.Float32bits(v)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 { // subnormal half (or zero): shift the full mantissa into 10 bits
		if e < -10 {
			return sign
		}
		m := man | 0x800000
		shift := uint(14 - e)
		half := m >> shift
		rem := m & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || rem == mid && half&1 == 1 {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && half&1 == 1 {
		half++ // may carry into the exponent, up to inf: still correct
	}
	return sign | uint16(half)
}

// ReadSafetensors reads every tensor of a safetensors file, widened to float32, and its
// metadata; any inconsistency of the file is an error naming it, the tensor and the field.
func ReadSafetensors(path string) (map[string]Tensor, map[string]string, error) {
	f, err := openSafetensors(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	out := make(map[string]Tensor, len(f.names))
	for _, name := range f.names {
		out[name] = f.tensor(name)
	}
	return out, f.metadata, nil
}

// WriteSafetensors writes tensors as one safetensors file in dtype, atomically (a temporary file
// renamed into place). The file is deterministic: the header's keys sorted (Go's JSON of a map),
// the data in the order of the names, the header padded with spaces to a multiple of 8 bytes as
// the Rust library writes it; metadata (e.g. PEFT's {"format": "pt"}) is omitted when empty.
func WriteSafetensors(path string, tensors map[string]Tensor, dtype DType, metadata map[string]string) error {
	if dtype.Size() == 0 {
		return fmt.Errorf("qwen3: %s: dtype %q is not implemented (BF16, F16, F32)", path, dtype)
	}
	names := make([]string, 0, len(tensors))
	for name, t := range tensors {
		if name == metadataKey || name == "" {
			return fmt.Errorf("qwen3: %s: %q is not a tensor name", path, name)
		}
		if len(t.Data) != product(t.Shape) {
			return fmt.Errorf("qwen3: %s: %s: shape %v needs %d values, the tensor has %d", path, name, t.Shape, product(t.Shape), len(t.Data))
		}
		names = append(names, name)
	}
	slices.Sort(names)
	type entry struct {
		DType       DType   `json:"dtype"`
		Shape       []int   `json:"shape"`
		DataOffsets []int64 `json:"data_offsets"`
	}
	header := map[string]any{}
	if len(metadata) > 0 {
		header[metadataKey] = metadata
	}
	at := int64(0)
	for _, name := range names {
		t := tensors[name]
		n := int64(len(t.Data) * dtype.Size())
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		header[name] = entry{dtype, shape, []int64{at, at + n}}
		at += n
	}
	hdr, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("qwen3: %s: header: %w", path, err)
	}
	for len(hdr)%8 != 0 {
		hdr = append(hdr, ' ')
	}
	err = atomicfile.Write(path, 0o644, func(w io.Writer) error {
		var buf []byte
		buf = binary.LittleEndian.AppendUint64(buf, uint64(len(hdr)))
		if _, err := w.Write(append(buf, hdr...)); err != nil {
			return err
		}
		for _, name := range names {
			if _, err := w.Write(encode(buf[:0], tensors[name].Data, dtype)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("qwen3: %s: %w", path, err)
	}
	return nil
}

// fileExists reports whether path is a regular file (false for absent; other errors returned).
func fileExists(path string) (bool, error) {
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("qwen3: %w", err)
	}
	if !st.Mode().IsRegular() {
		return false, fmt.Errorf("qwen3: %s: is not a regular file", path)
	}
	return true, nil
}

package schema

import (
	"encoding/binary"
	"fmt"

	"github.com/cespare/xxhash/v2"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// arrow-go decompresses a zstd buffer by reading exactly its uncompressed
// length, so the frame's content checksum is never verified and a flipped
// byte in a file can come back as silently different values. The zstd
// encoder arrow-go uses does write the checksum (the low 32 bits of the
// XXH64 of the content), and Open requires it of every buffer (checkFrame);
// verifyChecksums checks it against the decompressed buffers, which costs
// one fast hash pass over the data.

// verifyChecksums walks rec's buffers in IPC order (the order arrow-go's
// loader consumes them) and compares each with its zstd frame checksum.
func verifyChecksums(rec arrow.RecordBatch, s *arrow.Schema, info batchInfo) error {
	type buf struct {
		b   *memory.Buffer
		col int
	}
	var bufs []buf
	var walk func(d arrow.ArrayData, dt arrow.DataType, col int) bool
	walk = func(d arrow.ArrayData, dt arrow.DataType, col int) bool {
		bb := d.Buffers()
		take := func(n int) bool {
			if len(bb) < n {
				return false
			}
			for _, b := range bb[:n] {
				bufs = append(bufs, buf{b, col})
			}
			return true
		}
		switch t := dt.(type) {
		case *arrow.BooleanType, *arrow.Int32Type, *arrow.Int64Type, *arrow.Uint64Type,
			*arrow.Float32Type, *arrow.Float64Type:
			return take(2)
		case *arrow.StringType, *arrow.BinaryType:
			return take(3)
		case *arrow.ListType:
			return take(2) && walk(d.Children()[0], t.Elem(), col)
		case *arrow.FixedSizeListType:
			return take(1) && walk(d.Children()[0], t.Elem(), col)
		case *arrow.StructType:
			if !take(1) {
				return false
			}
			for k, f := range t.Fields() {
				if !walk(d.Children()[k], f.Type, col) {
					return false
				}
			}
			return true
		}
		return false // a type no table uses
	}
	for c, f := range s.Fields() {
		if !walk(rec.Column(c).Data(), f.Type, c) {
			return fmt.Errorf("column %q: its buffers do not match its type", f.Name)
		}
	}
	if len(bufs) != len(info.buffers) {
		return fmt.Errorf("%d buffers in the batch header, %d expected", len(info.buffers), len(bufs))
	}
	for i, sp := range info.buffers {
		name := s.Field(bufs[i].col).Name
		switch {
		case sp[1] == 0:
			continue
		case bufs[i].b == nil:
			// arrow-go skips the validity buffer when the null count is 0.
			return fmt.Errorf("column %q: buffer %d stored but not read (null count 0 with a validity bitmap)", name, i)
		}
		raw := info.body[sp[0] : sp[0]+sp[1]]
		want := binary.LittleEndian.Uint32(raw[len(raw)-zstdChecksumSize:])
		if got := uint32(xxhash.Sum64(bufs[i].b.Bytes())); got != want {
			return fmt.Errorf("column %q: checksum mismatch in buffer %d (data corrupt)", name, i)
		}
	}
	return nil
}

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
// XXH64 of the content); verifyChecksums checks it against the decompressed
// buffers, which costs one fast hash pass over the data.

// verifyChecksums walks rec's buffers in IPC order (the order arrow-go's
// loader consumes them) and compares each with its zstd frame checksum.
func verifyChecksums(rec arrow.RecordBatch, s *arrow.Schema, info batchInfo) error {
	if !info.zstd {
		return nil
	}
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
		return false // a type no table uses: nothing to verify against
	}
	for c, f := range s.Fields() {
		if !walk(rec.Column(c).Data(), f.Type, c) {
			return nil
		}
	}
	if len(bufs) != len(info.buffers) {
		return fmt.Errorf("%d buffers in the batch header, %d expected", len(info.buffers), len(bufs))
	}
	for i, sp := range info.buffers {
		if sp[1] == 0 || bufs[i].b == nil {
			continue
		}
		raw := info.body[sp[0] : sp[0]+sp[1]]
		// 8-byte uncompressed length (-1: stored raw), then one zstd frame:
		// magic, frame header descriptor, ..., 4-byte content checksum.
		if len(raw) < 8+4+1+4 || int64(binary.LittleEndian.Uint64(raw)) == -1 {
			continue
		}
		frame := raw[8:]
		if binary.LittleEndian.Uint32(frame) != 0xFD2FB528 || frame[4]&0x04 == 0 {
			continue // not a frame we can check, or no checksum written
		}
		want := binary.LittleEndian.Uint32(frame[len(frame)-4:])
		if got := uint32(xxhash.Sum64(bufs[i].b.Bytes())); got != want {
			return fmt.Errorf("column %q: checksum mismatch in buffer %d (data corrupt)", s.Field(bufs[i].col).Name, i)
		}
	}
	return nil
}

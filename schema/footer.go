package schema

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// The IPC footer lists each record batch as a block (offset, metadata
// length, body length) but arrow-go does not expose the blocks nor the row
// count of a batch without decompressing it. Open needs both to report
// NumRows and to reject a file whose blocks do not fit, so this file reads
// the few flatbuffer fields involved, with every access bounds-checked, after
// verifying each flatbuffer whole (verify.go) before arrow-go parses it.

// Flatbuffer layout constants from Arrow's File.fbs and Message.fbs.
const (
	footerSlotSchema           = 1
	footerSlotDictionaries     = 2
	footerSlotRecordBatches    = 3
	schemaSlotEndianness       = 0
	schemaSlotMetadata         = 2
	messageSlotHeader          = 2
	messageSlotBodyLength      = 3
	recordBatchSlotLength      = 0
	recordBatchSlotNodes       = 1
	recordBatchSlotBuffers     = 2
	recordBatchSlotCompression = 3
	compressionSlotCodec       = 0
	compressionSlotMethod      = 1
	codecZstd                  = 1 // CompressionType.ZSTD (LZ4_FRAME = 0 is the default)
	headerSchema               = 1 // MessageHeader.Schema
	headerRecordBatch          = 3 // MessageHeader.RecordBatch
	blockSize                  = 24
	bufferSize                 = 16
)

// block is one entry of the footer's recordBatches vector.
type block struct {
	offset  int64
	metaLen int32
	bodyLen int64
}

// fbError is panicked by the reader on an out-of-range access and recovered
// by the exported-facing parse functions.
type fbError struct{ msg string }

type fbuf []byte

func (b fbuf) need(pos, n int) {
	if pos < 0 || n < 0 || pos > len(b)-n {
		panic(fbError{fmt.Sprintf("flatbuffer access [%d,+%d) outside %d bytes", pos, n, len(b))})
	}
}
func (b fbuf) u16(pos int) int { b.need(pos, 2); return int(binary.LittleEndian.Uint16(b[pos:])) }
func (b fbuf) u32(pos int) int { b.need(pos, 4); return int(binary.LittleEndian.Uint32(b[pos:])) }
func (b fbuf) i32(pos int) int32 {
	b.need(pos, 4)
	return int32(binary.LittleEndian.Uint32(b[pos:]))
}
func (b fbuf) i64(pos int) int64 {
	b.need(pos, 8)
	return int64(binary.LittleEndian.Uint64(b[pos:]))
}
func (b fbuf) u8(pos int) int { b.need(pos, 1); return int(b[pos]) }

// root returns the position of the root table.
func (b fbuf) root() int { return b.u32(0) }

// field returns the absolute position of field slot in the table at tpos,
// or -1 when the field is absent (it then has its default value).
func (b fbuf) field(tpos, slot int) int {
	vt := tpos - int(b.i32(tpos))
	vtSize := b.u16(vt)
	at := 4 + 2*slot
	if at+2 > vtSize {
		return -1
	}
	off := b.u16(vt + at)
	if off == 0 {
		return -1
	}
	return tpos + off
}

// ref follows the offset stored at pos (to a table or vector).
func (b fbuf) ref(pos int) int { return pos + b.u32(pos) }

// vector returns the position of the first element and the length of the
// vector in field slot, or (0, 0) when absent.
func (b fbuf) vector(tpos, slot int) (int, int) {
	f := b.field(tpos, slot)
	if f < 0 {
		return 0, 0
	}
	v := b.ref(f)
	return v + 4, b.u32(v)
}

func recoverFB(err *error) {
	if p := recover(); p != nil {
		if e, ok := p.(fbError); ok {
			*err = fmt.Errorf("%s", e.msg)
			return
		}
		panic(p)
	}
}

// footer is what Open learns from the file footer.
type footer struct {
	blocks   []block     // record batches
	ndicts   int         // dictionary batches
	metadata [][2]string // the schema's custom metadata (lineage), in stored order
	start    int         // position of the footer flatbuffer in the file
}

// readFooter verifies the footer flatbuffer of the file data (already checked to start and end
// with the magic) and reads its blocks and schema metadata.
func readFooter(data []byte) (ft footer, err error) {
	defer recoverFB(&err)
	const tail = 4 + 6 // footer length + "ARROW1"
	if len(data) < 8+tail {
		return ft, fmt.Errorf("file too small (%d bytes)", len(data))
	}
	flen := int(int32(binary.LittleEndian.Uint32(data[len(data)-tail:])))
	ft.start = len(data) - tail - flen
	if flen <= 0 || ft.start < 8 {
		return ft, fmt.Errorf("bad footer length %d", flen)
	}
	fb := fbuf(data[ft.start : len(data)-tail])
	if err := verifyFB(fb, fbFooter); err != nil {
		return ft, err
	}
	root := fb.root()
	sch := fb.field(root, footerSlotSchema)
	if sch < 0 {
		return ft, fmt.Errorf("no schema")
	}
	sch = fb.ref(sch)
	if e := fb.field(sch, schemaSlotEndianness); e >= 0 && fb.u16(e) != 0 {
		return ft, fmt.Errorf("big-endian schema")
	}
	ft.metadata = fb.keyValues(sch, schemaSlotMetadata)
	_, ft.ndicts = fb.vector(root, footerSlotDictionaries)
	pos, n := fb.vector(root, footerSlotRecordBatches)
	ft.blocks = make([]block, n)
	for i := range ft.blocks {
		p := pos + i*blockSize
		ft.blocks[i] = block{offset: fb.i64(p), metaLen: fb.i32(p + 8), bodyLen: fb.i64(p + 16)}
		b := ft.blocks[i]
		if b.offset < 8 || b.metaLen <= 0 || b.bodyLen < 0 ||
			b.offset > int64(ft.start) || int64(b.metaLen) > int64(ft.start)-b.offset ||
			b.bodyLen > int64(ft.start)-b.offset-int64(b.metaLen) {
			return ft, fmt.Errorf("record batch block %d (offset %d, metadata %d, body %d) outside the file body",
				i, b.offset, b.metaLen, b.bodyLen)
		}
	}
	return ft, nil
}

// streamMetadata verifies the schema message that starts the file's stream (at offset 8, before
// limit) and returns its custom metadata. arrow-go reads the schema from the footer only; Open
// compares the two copies so that a changed byte in either copy of the lineage is caught, as
// the footer has no checksum of its own.
func streamMetadata(data []byte, limit int) (md [][2]string, err error) {
	defer recoverFB(&err)
	head := fbuf(data[:limit])
	if head.u32(8) != 0xFFFFFFFF {
		return nil, fmt.Errorf("no schema message at offset 8")
	}
	n := int(head.i32(12))
	head.need(16, n)
	msg := head[16 : 16+n]
	if err := verifyFB(msg, fbMessage(headerSchema, fbSchema)); err != nil {
		return nil, err
	}
	return msg.keyValues(msg.ref(msg.field(msg.root(), messageSlotHeader)), schemaSlotMetadata), nil
}

// keyValues returns the pairs of the KeyValue vector in field slot of the table at tpos.
func (b fbuf) keyValues(tpos, slot int) [][2]string {
	pos, n := b.vector(tpos, slot)
	kvs := make([][2]string, n)
	for i := range kvs {
		kv := b.ref(pos + 4*i)
		kvs[i] = [2]string{b.str(kv, 0), b.str(kv, 1)}
	}
	return kvs
}

// str returns the string in field slot of the table at tpos ("" when absent).
func (b fbuf) str(tpos, slot int) string {
	f := b.field(tpos, slot)
	if f < 0 {
		return ""
	}
	s := b.ref(f)
	n := b.u32(s)
	b.need(s+4, n)
	return string(b[s+4 : s+4+n])
}

// batchInfo is what Open learns from a record batch message header.
type batchInfo struct {
	rows    int64
	nodes   int        // field nodes in the header
	first   int64      // rows in the batches before
	body    []byte     // the message body within the file data
	buffers [][2]int64 // (offset, length) of each body buffer, in IPC order
}

// readBatch verifies the record batch message of block b: its flatbuffer, its body length, and
// every body buffer, which must be a zstd frame as Write makes it (see checkFrame).
func readBatch(data []byte, b block) (info batchInfo, err error) {
	defer recoverFB(&err)
	meta := fbuf(data[b.offset : b.offset+int64(b.metaLen)])
	// Message prefix: 0xFFFFFFFF continuation then int32 length; legacy files
	// have the length only. arrow-go parses the rest of the block's metadata.
	skip := 4
	if meta.u32(0) == 0xFFFFFFFF {
		skip = 8
	}
	if mlen := int(meta.i32(skip - 4)); mlen != len(meta)-skip {
		return info, fmt.Errorf("message length %d in a %d-byte metadata block", mlen, len(meta))
	}
	msg := meta[skip:]
	if err := verifyFB(msg, fbMessage(headerRecordBatch, fbRecordBatch)); err != nil {
		return info, fmt.Errorf("message: %w", err)
	}
	root := msg.root()
	var bodyLen int64
	if f := msg.field(root, messageSlotBodyLength); f >= 0 {
		bodyLen = msg.i64(f)
	}
	if bodyLen != b.bodyLen {
		return info, fmt.Errorf("body length %d, block says %d", bodyLen, b.bodyLen)
	}
	info.body = data[b.offset+int64(b.metaLen) : b.offset+int64(b.metaLen)+bodyLen]
	rb := msg.ref(msg.field(root, messageSlotHeader))
	if f := msg.field(rb, recordBatchSlotLength); f >= 0 {
		info.rows = msg.i64(f)
	}
	if info.rows < 0 {
		return info, fmt.Errorf("negative row count %d", info.rows)
	}
	codec, method := -1, 0
	if f := msg.field(rb, recordBatchSlotCompression); f >= 0 {
		comp := msg.ref(f)
		codec = 0
		if c := msg.field(comp, compressionSlotCodec); c >= 0 {
			codec = msg.u8(c)
		}
		if m := msg.field(comp, compressionSlotMethod); m >= 0 {
			method = msg.u8(m)
		}
	}
	if codec != codecZstd || method != 0 {
		return info, fmt.Errorf("body not zstd-compressed per buffer (codec %d, method %d)", codec, method)
	}
	_, info.nodes = msg.vector(rb, recordBatchSlotNodes)
	pos, n := msg.vector(rb, recordBatchSlotBuffers)
	info.buffers = make([][2]int64, n)
	for i := range info.buffers {
		off, l := msg.i64(pos+i*bufferSize), msg.i64(pos+i*bufferSize+8)
		if off < 0 || l < 0 || off > bodyLen || l > bodyLen-off {
			return info, fmt.Errorf("buffer %d (offset %d, length %d) outside the %d-byte body", i, off, l, bodyLen)
		}
		if l > 0 {
			if err := checkFrame(info.body[off : off+l]); err != nil {
				return info, fmt.Errorf("buffer %d: %w", i, err)
			}
		}
		info.buffers[i] = [2]int64{off, l}
	}
	return info, nil
}

// layout returns the field nodes and buffers a batch of schema s holds in IPC: one node per
// array and child array; validity and values buffers (plus offsets for strings and lists).
func layout(s *arrow.Schema) (nodes, buffers int) {
	var walk func(dt arrow.DataType)
	walk = func(dt arrow.DataType) {
		nodes++
		switch t := dt.(type) {
		case *arrow.StringType, *arrow.BinaryType:
			buffers += 3
		case *arrow.ListType:
			buffers += 2
			walk(t.Elem())
		case *arrow.FixedSizeListType:
			buffers++
			walk(t.Elem())
		case *arrow.StructType:
			buffers++
			for _, f := range t.Fields() {
				walk(f.Type)
			}
		default: // the fixed-width types
			buffers += 2
		}
	}
	for _, f := range s.Fields() {
		walk(f.Type)
	}
	return nodes, buffers
}

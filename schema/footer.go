package schema

import (
	"encoding/binary"
	"fmt"
)

// The IPC footer lists each record batch as a block (offset, metadata
// length, body length) but arrow-go does not expose the blocks nor the row
// count of a batch without decompressing it. Open needs both to report
// NumRows and to reject a file whose blocks do not fit, so this file reads
// the few flatbuffer fields involved, with every access bounds-checked.

// Flatbuffer layout constants from Arrow's File.fbs and Message.fbs.
const (
	footerSlotDictionaries     = 2
	footerSlotRecordBatches    = 3
	messageSlotHeaderType      = 1
	messageSlotHeader          = 2
	messageSlotBodyLength      = 3
	recordBatchSlotLength      = 0
	recordBatchSlotBuffers     = 2
	recordBatchSlotCompression = 3
	compressionSlotCodec       = 0
	codecZstd                  = 1 // CompressionType.ZSTD (LZ4_FRAME = 0 is the default)
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

// readFooter returns the record batch blocks and the number of dictionary
// blocks of the file data (already checked to start and end with the magic).
func readFooter(data []byte) (blocks []block, ndicts int, err error) {
	defer recoverFB(&err)
	const tail = 4 + 6 // footer length + "ARROW1"
	if len(data) < 8+tail {
		return nil, 0, fmt.Errorf("file too small (%d bytes)", len(data))
	}
	flen := int(int32(binary.LittleEndian.Uint32(data[len(data)-tail:])))
	start := len(data) - tail - flen
	if flen <= 0 || start < 8 {
		return nil, 0, fmt.Errorf("bad footer length %d", flen)
	}
	fb := fbuf(data[start : len(data)-tail])
	root := fb.root()
	_, ndicts = fb.vector(root, footerSlotDictionaries)
	pos, n := fb.vector(root, footerSlotRecordBatches)
	fb.need(pos, n*blockSize)
	blocks = make([]block, n)
	for i := range blocks {
		p := pos + i*blockSize
		blocks[i] = block{offset: fb.i64(p), metaLen: fb.i32(p + 8), bodyLen: fb.i64(p + 16)}
		b := blocks[i]
		if b.offset < 8 || b.metaLen <= 0 || b.bodyLen < 0 ||
			b.offset > int64(start) || int64(b.metaLen) > int64(start)-b.offset ||
			b.bodyLen > int64(start)-b.offset-int64(b.metaLen) {
			return nil, 0, fmt.Errorf("record batch block %d (offset %d, metadata %d, body %d) outside the file body",
				i, b.offset, b.metaLen, b.bodyLen)
		}
	}
	return blocks, ndicts, nil
}

// batchInfo is what Open learns from a record batch message header.
type batchInfo struct {
	rows    int64
	zstd    bool       // body buffers are zstd-compressed
	body    []byte     // the message body within the file data
	buffers [][2]int64 // (offset, length) of each body buffer, in IPC order
}

// readBatch reads the header of the record batch message of block b and
// checks that it is a record batch whose body length and buffers fit.
func readBatch(data []byte, b block) (info batchInfo, err error) {
	defer recoverFB(&err)
	meta := fbuf(data[b.offset : b.offset+int64(b.metaLen)])
	// Message prefix: 0xFFFFFFFF continuation then int32 length; legacy files
	// have the length only.
	skip := 4
	if meta.u32(0) == 0xFFFFFFFF {
		skip = 8
	}
	mlen := int(meta.i32(skip - 4))
	meta.need(skip, mlen)
	msg := fbuf(meta[skip : skip+mlen])
	root := msg.root()
	ht := msg.field(root, messageSlotHeaderType)
	if ht < 0 || msg.u8(ht) != headerRecordBatch {
		return info, fmt.Errorf("message is not a record batch")
	}
	var bodyLen int64
	if f := msg.field(root, messageSlotBodyLength); f >= 0 {
		bodyLen = msg.i64(f)
	}
	if bodyLen != b.bodyLen {
		return info, fmt.Errorf("body length %d, block says %d", bodyLen, b.bodyLen)
	}
	info.body = data[b.offset+int64(b.metaLen) : b.offset+int64(b.metaLen)+bodyLen]
	hdr := msg.field(root, messageSlotHeader)
	if hdr < 0 {
		return info, fmt.Errorf("record batch header missing")
	}
	rb := msg.ref(hdr)
	if f := msg.field(rb, recordBatchSlotLength); f >= 0 {
		info.rows = msg.i64(f)
	}
	if info.rows < 0 {
		return info, fmt.Errorf("negative row count %d", info.rows)
	}
	if f := msg.field(rb, recordBatchSlotCompression); f >= 0 {
		comp := msg.ref(f)
		codec := 0
		if c := msg.field(comp, compressionSlotCodec); c >= 0 {
			codec = msg.u8(c)
		}
		info.zstd = codec == codecZstd
	}
	pos, n := msg.vector(rb, recordBatchSlotBuffers)
	msg.need(pos, n*bufferSize)
	info.buffers = make([][2]int64, n)
	for i := range info.buffers {
		off, l := msg.i64(pos+i*bufferSize), msg.i64(pos+i*bufferSize+8)
		if off < 0 || l < 0 || off > bodyLen || l > bodyLen-off {
			return info, fmt.Errorf("buffer %d (offset %d, length %d) outside the %d-byte body", i, off, l, bodyLen)
		}
		info.buffers[i] = [2]int64{off, l}
	}
	return info, nil
}

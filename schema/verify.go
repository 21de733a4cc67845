package schema

import (
	"encoding/binary"
	"fmt"
)

// arrow-go trusts the flatbuffers of a file's footer and messages: a vector length becomes
// make([]arrow.Field, n), a compressed buffer's length prefix becomes an allocation, and a
// batch's nodes and buffers are indexed without checking their vectors' lengths. So one flipped
// byte could ask for a terabyte, and the Go runtime ends the process on a failed allocation (a
// fatal error that recover cannot catch). Open therefore walks every flatbuffer arrow-go will
// read, with the reader below, before arrow-go sees it: every table, vector and string must lie
// inside the buffer, nesting is bounded, and the walk may visit no more tables than the buffer
// has room for (tables reached through several offsets would let arrow-go expand a small
// footer into an exponential number of fields). Field types are limited to those the tables
// declare. Open then checks each batch's node and buffer counts against its table (layout) and
// each buffer's length prefix against its zstd frame (checkFrame).

// fbSpec describes the fields of one flatbuffer table that arrow-go reads.
type fbSpec struct {
	name   string
	fields []fbField
}

type fbKind int

const (
	fbScalar fbKind = iota // inline value of size bytes
	fbString               // offset to a string
	fbVector               // offset to a vector of size-byte scalars or structs
	fbTable                // offset to a table of spec
	fbTables               // offset to a vector of offsets to tables of spec
	fbUnion                // offset to a table whose spec depends on the type in slot-1
	fbAbsent               // must not be present (a feature no table uses)
)

type fbField struct {
	slot  int
	kind  fbKind
	size  int
	spec  *fbSpec
	types map[int]*fbSpec // fbUnion: allowed type values
}

// Arrow's Schema.fbs, File.fbs and Message.fbs, restricted to what the tables use.
var (
	fbKeyValue = &fbSpec{"KeyValue", []fbField{{slot: 0, kind: fbString}, {slot: 1, kind: fbString}}}
	fbNoFields = &fbSpec{name: "type"}
	fbInt      = &fbSpec{"Int", []fbField{{slot: 0, kind: fbScalar, size: 4}, {slot: 1, kind: fbScalar, size: 1}}}
	fbFloat    = &fbSpec{"FloatingPoint", []fbField{{slot: 0, kind: fbScalar, size: 2}}}
	fbFixedLen = &fbSpec{"FixedSizeList", []fbField{{slot: 0, kind: fbScalar, size: 4}}}
	// Type union values: Int 2, FloatingPoint 3, Utf8 5, Bool 6, List 12, Struct_ 13,
	// FixedSizeList 16.
	fbTypes = map[int]*fbSpec{2: fbInt, 3: fbFloat, 5: fbNoFields, 6: fbNoFields, 12: fbNoFields, 13: fbNoFields, 16: fbFixedLen}

	fbFieldSpec = &fbSpec{name: "Field"} // recursive: fields set in init
	fbSchema    = &fbSpec{"Schema", []fbField{
		{slot: 0, kind: fbScalar, size: 2}, // endianness
		{slot: 1, kind: fbTables, spec: fbFieldSpec},
		{slot: 2, kind: fbTables, spec: fbKeyValue},
		{slot: 3, kind: fbVector, size: 8}, // features
	}}
	fbFooter = &fbSpec{"Footer", []fbField{
		{slot: 0, kind: fbScalar, size: 2}, // version
		{slot: 1, kind: fbTable, spec: fbSchema},
		{slot: 2, kind: fbVector, size: blockSize}, // dictionaries
		{slot: 3, kind: fbVector, size: blockSize}, // record batches
		{slot: 4, kind: fbTables, spec: fbKeyValue},
	}}
	fbRecordBatch = &fbSpec{"RecordBatch", []fbField{
		{slot: recordBatchSlotLength, kind: fbScalar, size: 8},
		{slot: recordBatchSlotNodes, kind: fbVector, size: 16}, // field nodes
		{slot: recordBatchSlotBuffers, kind: fbVector, size: bufferSize},
		{slot: recordBatchSlotCompression, kind: fbTable, spec: &fbSpec{"BodyCompression", []fbField{
			{slot: compressionSlotCodec, kind: fbScalar, size: 1}, {slot: 1, kind: fbScalar, size: 1}}}},
		{slot: 4, kind: fbVector, size: 8}, // variadic buffer counts
	}}
)

func init() {
	fbFieldSpec.fields = []fbField{
		{slot: 0, kind: fbString},
		{slot: 1, kind: fbScalar, size: 1}, // nullable
		{slot: 3, kind: fbUnion, types: fbTypes},
		{slot: 4, kind: fbAbsent}, // dictionary encoding
		{slot: 5, kind: fbTables, spec: fbFieldSpec},
		{slot: 6, kind: fbTables, spec: fbKeyValue},
	}
}

// fbMessage is a Message whose header must be the given table (MessageHeader values: Schema 1,
// RecordBatch 3).
func fbMessage(header int, spec *fbSpec) *fbSpec {
	return &fbSpec{"Message", []fbField{
		{slot: 0, kind: fbScalar, size: 2}, // version
		{slot: messageSlotHeader, kind: fbUnion, types: map[int]*fbSpec{header: spec}},
		{slot: messageSlotBodyLength, kind: fbScalar, size: 8},
		{slot: 4, kind: fbTables, spec: fbKeyValue},
	}}
}

const maxFBDepth = 16 // the deepest declared type, list<utf8>, needs 4 (schema, field, child)

type fbVerifier struct {
	b      fbuf
	tables int // visited so far, each at least 4 bytes
}

// verifyFB checks the flatbuffer b whose root table is described by spec.
func verifyFB(b []byte, spec *fbSpec) (err error) {
	defer recoverFB(&err)
	v := &fbVerifier{b: b}
	v.table(fbuf(b).root(), spec, 0)
	return nil
}

func (v *fbVerifier) fail(format string, args ...any) {
	panic(fbError{fmt.Sprintf(format, args...)})
}

func (v *fbVerifier) table(pos int, spec *fbSpec, depth int) {
	switch {
	case depth > maxFBDepth:
		v.fail("%s nested deeper than %d", spec.name, maxFBDepth)
	case v.tables >= len(v.b)/4:
		v.fail("more tables than the %d-byte flatbuffer can hold", len(v.b))
	}
	v.tables++
	b := v.b
	vt := pos - int(b.i32(pos))
	vtSize, tSize := b.u16(vt), b.u16(vt+2)
	if vtSize < 4 || vtSize%2 != 0 {
		v.fail("%s at %d: bad vtable size %d", spec.name, pos, vtSize)
	}
	b.need(vt, vtSize)
	b.need(pos, tSize)
	for _, f := range spec.fields {
		p := b.field(pos, f.slot)
		if p < 0 {
			if f.kind == fbUnion {
				v.fail("%s at %d: union value missing", spec.name, pos)
			}
			continue
		}
		switch f.kind {
		case fbScalar:
			b.need(p, f.size)
		case fbString:
			s := b.ref(p)
			b.need(s+4, b.u32(s))
		case fbVector:
			v.vector(b.ref(p), f.size)
		case fbTable:
			v.table(b.ref(p), f.spec, depth+1)
		case fbTables:
			at, n := v.vector(b.ref(p), 4)
			for i := range n {
				v.table(b.ref(at+4*i), f.spec, depth+1)
			}
		case fbUnion:
			typ := 0
			if tp := b.field(pos, f.slot-1); tp >= 0 {
				typ = b.u8(tp)
			}
			s, ok := f.types[typ]
			if !ok {
				v.fail("%s at %d: unsupported union type %d", spec.name, pos, typ)
			}
			v.table(b.ref(p), s, depth+1)
		case fbAbsent:
			v.fail("%s at %d: unsupported field %d present", spec.name, pos, f.slot)
		}
	}
}

// vector checks the vector at pos of n elements of size bytes and returns its first element
// position and n.
func (v *fbVerifier) vector(pos, size int) (int, int) {
	n := v.b.u32(pos)
	if int64(n)*int64(size) > int64(len(v.b)) {
		v.fail("vector of %d elements at %d exceeds the %d-byte flatbuffer", n, pos, len(v.b))
	}
	v.b.need(pos+4, n*size)
	return pos + 4, n
}

// Zstandard frame format (RFC 8878), as far as needed to bound a frame's content size without
// decompressing it.
const (
	zstdMagic        = 0xFD2FB528
	zstdMaxBlock     = 128 << 10 // Block_Maximum_Size
	zstdChecksumSize = 4
)

// checkFrame checks that buf, one body buffer of a batch, is what Write produces: the
// uncompressed length as an int64, then exactly one zstd frame with a content checksum, whose
// blocks can produce that many bytes. arrow-go allocates the declared length before
// decompressing, so the length must be bounded by the frame; the checksum is what
// verifyChecksums compares the decompressed bytes with.
func checkFrame(buf []byte) error {
	if len(buf) < 8 {
		return fmt.Errorf("%d bytes, too short for a compressed buffer", len(buf))
	}
	size := int64(binary.LittleEndian.Uint64(buf))
	f := buf[8:]
	if len(f) < 6 || binary.LittleEndian.Uint32(f) != zstdMagic {
		return fmt.Errorf("not a zstd frame")
	}
	fhd := f[4]
	fcsFlag, single, checksum, dictFlag := fhd>>6, fhd&0x20 != 0, fhd&0x04 != 0, fhd&0x03
	switch {
	case fhd&0x08 != 0:
		return fmt.Errorf("zstd frame header reserved bit set")
	case !checksum:
		return fmt.Errorf("zstd frame without a content checksum")
	case dictFlag != 0:
		return fmt.Errorf("zstd frame with a dictionary")
	}
	pos := 5
	if !single {
		pos++ // window descriptor
	}
	fcsSize := [4]int{0, 2, 4, 8}[fcsFlag]
	if fcsFlag == 0 && single {
		fcsSize = 1
	}
	if pos+fcsSize > len(f) {
		return fmt.Errorf("zstd frame header truncated")
	}
	fcs := int64(-1)
	switch fcsSize {
	case 1:
		fcs = int64(f[pos])
	case 2:
		fcs = int64(binary.LittleEndian.Uint16(f[pos:])) + 256
	case 4:
		fcs = int64(binary.LittleEndian.Uint32(f[pos:]))
	case 8:
		fcs = int64(binary.LittleEndian.Uint64(f[pos:]))
	}
	pos += fcsSize
	var bound int64
	for last := false; !last; {
		if pos+3 > len(f) {
			return fmt.Errorf("zstd block header truncated")
		}
		h := int(f[pos]) | int(f[pos+1])<<8 | int(f[pos+2])<<16
		pos += 3
		last = h&1 != 0
		n := h >> 3
		if n > zstdMaxBlock {
			return fmt.Errorf("zstd block of %d bytes", n)
		}
		switch (h >> 1) & 3 {
		case 0: // raw
			bound += int64(n)
			pos += n
		case 1: // RLE: one byte repeated n times
			bound += int64(n)
			pos++
		case 2: // compressed: at most one maximum block
			bound += zstdMaxBlock
			pos += n
		default:
			return fmt.Errorf("reserved zstd block type")
		}
	}
	if pos+zstdChecksumSize != len(f) {
		return fmt.Errorf("zstd frame of %d bytes in a %d-byte buffer", pos+zstdChecksumSize, len(f))
	}
	switch {
	case size < 0 || size > bound:
		return fmt.Errorf("uncompressed length %d, but the zstd frame holds at most %d bytes", size, bound)
	case fcs >= 0 && fcs != size:
		return fmt.Errorf("uncompressed length %d, but the zstd frame says %d", size, fcs)
	}
	return nil
}

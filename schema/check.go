package schema

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// checkData verifies that the buffers of d are large enough and its offsets
// consistent for type dt, and that it holds no nulls where the declaration
// forbids them. arrow-go loads IPC buffers without these checks, so a
// corrupt file would otherwise panic (or read garbage) on first access.
func checkData(d arrow.ArrayData, dt arrow.DataType, nullable bool) error {
	n, off := int64(d.Len()), int64(d.Offset())
	end := off + n
	bufs := d.Buffers()
	buf := func(i int) *memory.Buffer {
		if i < len(bufs) {
			return bufs[i]
		}
		return nil
	}
	size := func(i int) int64 {
		if b := buf(i); b != nil {
			return int64(b.Len())
		}
		return 0
	}
	if nulls := int64(d.NullN()); nulls < 0 || nulls > n {
		// arrow-go would count a negative one from the bitmap, which may be absent.
		return fmt.Errorf("null count %d for %d values", nulls, n)
	}
	if d.NullN() > 0 {
		if !nullable {
			return fmt.Errorf("%d nulls in a non-nullable field", d.NullN())
		}
		if size(0) < bitutil.BytesForBits(end) {
			return errors.New("validity bitmap too short")
		}
		// DuckDB and arrow-go trust the count; the bitmap is what the checksum covers.
		if valid := int64(bitutil.CountSetBits(buf(0).Bytes(), int(off), int(n))); valid != n-int64(d.NullN()) {
			return fmt.Errorf("null count %d, but the validity bitmap has %d nulls", d.NullN(), n-valid)
		}
	}
	if n == 0 {
		return nil
	}
	switch t := dt.(type) {
	case *arrow.BooleanType:
		if size(1) < bitutil.BytesForBits(end) {
			return errors.New("boolean values too short")
		}
	case arrow.FixedWidthDataType:
		if size(1) < end*int64(t.BitWidth()/8) {
			return fmt.Errorf("%s values too short: %d bytes for %d values", dt, size(1), end)
		}
	case *arrow.StringType, *arrow.BinaryType:
		return checkOffsets32(buf(1), off, n, size(2))
	case *arrow.ListType:
		child := d.Children()[0]
		if err := checkOffsets32(buf(1), off, n, int64(child.Len())); err != nil {
			return err
		}
		return checkChild(child, t.ElemField())
	case *arrow.FixedSizeListType:
		child := d.Children()[0]
		if int64(child.Len()) < end*int64(t.Len()) {
			return fmt.Errorf("fixed-size list values too short: %d for %d lists of %d", child.Len(), end, t.Len())
		}
		return checkChild(child, t.ElemField())
	case *arrow.StructType:
		for i, f := range t.Fields() {
			if int64(d.Children()[i].Len()) < end {
				return fmt.Errorf("struct field %q too short", f.Name)
			}
			if err := checkChild(d.Children()[i], f); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkChild(d arrow.ArrayData, f arrow.Field) error {
	if err := checkData(d, f.Type, f.Nullable); err != nil {
		return fmt.Errorf("%s: %w", f.Name, err)
	}
	return nil
}

// checkOffsets32 checks n+1 int32 offsets starting at off: present,
// non-decreasing and within [0, limit].
func checkOffsets32(b *memory.Buffer, off, n, limit int64) error {
	if b == nil || int64(b.Len()) < (off+n+1)*4 {
		return errors.New("offsets buffer too short")
	}
	offs := arrow.Int32Traits.CastFromBytes(b.Bytes())[off : off+n+1]
	prev := offs[0]
	if prev < 0 {
		return fmt.Errorf("negative offset %d", prev)
	}
	for _, o := range offs[1:] {
		if o < prev {
			return fmt.Errorf("offsets decrease (%d after %d)", o, prev)
		}
		prev = o
	}
	if int64(prev) > limit {
		return fmt.Errorf("offset %d beyond %d values", prev, limit)
	}
	return nil
}

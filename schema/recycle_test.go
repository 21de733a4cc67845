package schema

import (
	"testing"
	"unsafe"
)

func TestRecycler(t *testing.T) {
	r := newRecycler()
	small := r.Allocate(100)
	if len(small) != 100 {
		t.Fatalf("len %d", len(small))
	}
	r.Free(small) // not recycled: too small
	if r.held != 0 {
		t.Errorf("small buffer recycled")
	}
	b := r.Allocate(3 << 20)
	if len(b) != 3<<20 || cap(b) != 4<<20 {
		t.Fatalf("len %d cap %d", len(b), cap(b))
	}
	if uintptr(unsafe.Pointer(&b[0]))%64 != 0 {
		t.Error("buffer not 64-byte aligned")
	}
	for i := range b {
		b[i] = 0xff
	}
	r.Free(b)
	if r.held != 4<<20 {
		t.Errorf("held %d", r.held)
	}
	c := r.Allocate(4 << 20)
	if &c[0] != &b[0] {
		t.Error("buffer not reused")
	}
	for i, x := range c[:cap(c)] {
		if x != 0 {
			t.Fatalf("reused buffer not cleared at %d", i)
		}
	}
	// Growing within capacity keeps the buffer; beyond, it moves and the
	// old one is recycled.
	c = r.Reallocate(4<<20, c[:1<<20])
	d := r.Reallocate(5<<20, c)
	if cap(d) != 8<<20 || r.held != 4<<20 {
		t.Errorf("cap %d held %d", cap(d), r.held)
	}
	// The free lists are bounded.
	for range 2 * maxHeld / (64 << 20) {
		r.Free(make([]byte, 64<<20))
	}
	if r.held > maxHeld {
		t.Errorf("held %d > %d", r.held, maxHeld)
	}
}

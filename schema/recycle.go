package schema

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// recycler is the allocator of one Write or one open File. Each batch
// written allocates fresh column buffers (the re-chunking copy) and
// compressed buffers, and each batch read allocates decompressed buffers;
// with Go's allocator every batch touches new pages, and page faults, not
// copying, dominated the time (on a 1M-row decisions table: write 10.5 s ->
// 6 s, read 4.9 s -> 3.0 s with recycling). The recycler keeps freed large
// buffers in power-of-two size classes for the next batch.
//
// Buffers are cleared before reuse, as Go's allocator returns zeroed memory
// and arrow-go (and the file's padding bytes) rely on it. Reuse follows
// arrow's reference counting: a buffer is reused only after its last
// Release, so code that reads a batch after releasing it sees other data.
type recycler struct {
	mu   sync.Mutex
	free map[int][][]byte // by capacity (a power of two >= minRecycled)
	held int              // bytes in free
	goa  memory.GoAllocator
}

const (
	minRecycled = 1 << 20   // smaller buffers are cheap: leave them to Go
	maxHeld     = 512 << 20 // beyond this, freed buffers go to the GC
)

func newRecycler() *recycler { return &recycler{free: map[int][][]byte{}} }

// newAllocator gives each Write and each open File its allocator. Tests replace it with a
// memory.CheckedAllocator around the recycler to prove that every buffer is released: a buffer
// released too early would be reused while still read, one never released would be lost.
var newAllocator = func() memory.Allocator { return newRecycler() }

func (r *recycler) Allocate(size int) []byte {
	if size < minRecycled {
		return r.goa.Allocate(size)
	}
	class := 1 << bits.Len(uint(size-1))
	r.mu.Lock()
	var b []byte
	if l := r.free[class]; len(l) > 0 {
		b, r.free[class] = l[len(l)-1], l[:len(l)-1]
		r.held -= class
	}
	r.mu.Unlock()
	if b == nil {
		// Large Go allocations are page-aligned, so 64-byte aligned as
		// arrow wants.
		b = make([]byte, class)
	} else {
		clear(b)
	}
	return b[:size]
}

func (r *recycler) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		return b[:size]
	}
	nb := r.Allocate(size)
	copy(nb, b)
	r.Free(b)
	return nb
}

func (r *recycler) Free(b []byte) {
	c := cap(b)
	// Only buffers this recycler made have a power-of-two capacity this
	// large: Go-allocated ones are smaller than minRecycled.
	if c < minRecycled || c&(c-1) != 0 {
		return
	}
	r.mu.Lock()
	if r.held+c <= maxHeld {
		r.free[c] = append(r.free[c], b[:c])
		r.held += c
	}
	r.mu.Unlock()
}

package cpuslot

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
)

// TestWaitingGivesTheSlotBack: with one slot, a holder that waits on the network lets another
// holder work meanwhile, and takes the slot again when it resumes; nested waits give it back once.
func TestWaitingGivesTheSlotBack(t *testing.T) {
	p := NewPool(1)
	ctx, release := p.Hold(context.Background())
	resume := Wait(ctx)
	inner := Wait(ctx) // a second call of the same holder waiting at once
	other, releaseOther := p.Hold(context.Background())
	if other.Value(holderKey{}) == nil {
		t.Fatal("the second holder's context carries no slot")
	}
	releaseOther()
	inner()
	if len(p.slots) != 0 {
		t.Fatal("one of two waiting calls resumed and took the slot: the other still waits")
	}
	resume()
	if len(p.slots) != 1 {
		t.Fatalf("after resuming, %d slots held, want 1", len(p.slots))
	}
	release()
	if len(p.slots) != 0 {
		t.Fatal("the slot was not given back")
	}
	Wait(context.Background())() // no slot held: nothing to give back
}

// TestNeverMoreThanNWorkAtOnce: however holders interleave work and waits, at most n of them
// work at once.
func TestNeverMoreThanNWorkAtOnce(t *testing.T) {
	p := NewPool(3)
	var working, most atomic.Int64
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, release := p.Hold(context.Background())
			defer release()
			for range 20 {
				n := working.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				working.Add(-1)
				Wait(ctx)()
			}
		}()
	}
	wg.Wait()
	if most.Load() > 3 {
		t.Fatalf("%d holders worked at once with 3 slots", most.Load())
	}
}

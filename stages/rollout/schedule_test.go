package rollout

import (
	"fmt"
	"testing"
)

func fixture(sizes map[string]int) ([]string, map[string][]string) {
	fams := []string{"a", "b", "c", "d", "e", "f"}
	by := map[string][]string{}
	for _, f := range fams {
		for i := 0; i < sizes[f]; i++ {
			by[f] = append(by[f], fmt.Sprintf("%s/%d", f, i))
		}
	}
	return fams, by
}

func TestScheduleBalancesAndRotates(t *testing.T) {
	fams, by := fixture(map[string]int{"a": 40, "b": 40, "c": 40, "d": 40, "e": 40, "f": 40})
	extra := map[string]int{}
	for step := 1; step <= 6; step++ {
		batch := Schedule(7, step, 32, fams, by)
		if len(batch) != 32 {
			t.Fatalf("step %d: %d tasks", step, len(batch))
		}
		per := map[string]int{}
		for _, id := range batch {
			per[id[:1]]++
		}
		for f, n := range per {
			if n != 5 && n != 6 {
				t.Fatalf("step %d: family %s got %d tasks, want 5 or 6", step, f, n)
			}
			if n == 6 {
				extra[f]++
			}
		}
	}
	// 6 steps x remainder 2 = 12 extras, rotating: each family gets exactly 2.
	for _, f := range fams {
		if extra[f] != 2 {
			t.Fatalf("remainder does not rotate evenly: %v", extra)
		}
	}
}

func TestScheduleUsesEveryTaskOncePerEpoch(t *testing.T) {
	fams, by := fixture(map[string]int{"a": 12, "b": 12, "c": 12, "d": 12, "e": 12, "f": 12})
	seen := map[string]int{}
	for step := 1; step <= 3; step++ { // 3 x 24 = 72 = one epoch of 6 x 12
		for _, id := range Schedule(1, step, 24, fams, by) {
			seen[id]++
		}
	}
	if len(seen) != 72 {
		t.Fatalf("one epoch used %d distinct tasks, want 72", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("%s used %d times in one epoch", id, n)
		}
	}
}

func TestScheduleIsSeededAndSkipsEmptyFamilies(t *testing.T) {
	fams, by := fixture(map[string]int{"a": 10, "b": 10})
	x, y := Schedule(1, 1, 8, fams, by), Schedule(1, 1, 8, fams, by)
	if fmt.Sprint(x) != fmt.Sprint(y) {
		t.Fatal("same seed, different batch")
	}
	if fmt.Sprint(x) == fmt.Sprint(Schedule(2, 1, 8, fams, by)) {
		t.Fatal("seed does not change the batch")
	}
	for _, id := range x {
		if id[0] != 'a' && id[0] != 'b' {
			t.Fatalf("task %s from a family without tasks", id)
		}
	}
	if Schedule(1, 1, 8, fams, map[string][]string{}) != nil {
		t.Fatal("no tasks must give an empty batch")
	}
}

// A step never holds a task twice, whatever the pool sizes (episode ids name the task): a family
// with fewer tasks than its share gives each of them once, and one whose walk crosses an epoch
// boundary in a step defers a task it already gave to the next step. Over the steps every task
// of a family is used as often as any other, give or take one.
func TestScheduleNeverRepeatsATaskInAStep(t *testing.T) {
	for _, tc := range []struct {
		sizes map[string]int
		batch int
	}{
		{map[string]int{"a": 9}, 32},                   // the 9 rows
		{map[string]int{"a": 10}, 4},                   // epoch boundaries inside steps
		{map[string]int{"a": 3, "b": 10, "c": 7}, 12},  // shares of 4
		{map[string]int{"a": 1, "b": 2, "c": 5}, 7},    // rotating remainder
		{map[string]int{"a": 6, "b": 6, "c": 6}, 18},   // pools equal to the shares
		{map[string]int{"a": 11, "b": 13, "f": 5}, 10}, // uneven
	} {
		fams, by := fixture(tc.sizes)
		active := 0
		for _, f := range fams {
			if tc.sizes[f] > 0 {
				active++
			}
		}
		uses := map[string]int{}
		for step := 1; step <= 25; step++ {
			batch := Schedule(3, step, tc.batch, fams, by)
			want, per := 0, map[string]int{}
			seen := map[string]bool{}
			for _, id := range batch {
				if seen[id] {
					t.Fatalf("%v batch %d step %d: %s twice in %v", tc.sizes, tc.batch, step, id, batch)
				}
				seen[id] = true
				uses[id]++
				per[id[:1]]++
			}
			for f, n := range tc.sizes {
				share := tc.batch / active
				if tc.batch%active != 0 {
					share++
				}
				if per[f] > min(n, share) {
					t.Fatalf("%v step %d: family %s gave %d tasks, at most %d", tc.sizes, step, f, per[f], min(n, share))
				}
				want += min(n, tc.batch/active)
			}
			if len(batch) < want {
				t.Fatalf("%v step %d: %d tasks, want at least %d", tc.sizes, step, len(batch), want)
			}
		}
		for f, n := range tc.sizes {
			lo, hi := 1<<30, 0
			for i := 0; i < n; i++ {
				u := uses[fmt.Sprintf("%s/%d", f, i)]
				lo, hi = min(lo, u), max(hi, u)
			}
			if hi-lo > 1 {
				t.Errorf("%v batch %d: family %s's tasks used %d to %d times", tc.sizes, tc.batch, f, lo, hi)
			}
		}
	}
}

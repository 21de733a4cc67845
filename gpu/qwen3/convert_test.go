package qwen3

import (
	"math"
	"testing"
)

// Every half widens and narrows back to itself, and a value halfway between two halves narrows
// to the even one (ties to even), just above it to the upper one.
func TestF16Conversions(t *testing.T) {
	for h := range uint32(1 << 16) {
		h := uint16(h)
		v := f16ToF32(h)
		if v != v {
			if back := f32ToF16(v); back&0x7c00 != 0x7c00 || back&0x3ff == 0 {
				t.Fatalf("NaN %#04x narrowed to %#04x", h, back)
			}
			continue
		}
		if back := f32ToF16(v); back != h {
			t.Fatalf("%#04x → %v → %#04x", h, v, back)
		}
		if h&0x7fff >= 0x7bff { // the largest finite half and inf have no finite neighbour above
			continue
		}
		next := f16ToF32(h + 1)
		if h&0x8000 != 0 && h&0x7fff == 0 {
			continue // −0's successor in bits is the smallest negative subnormal: not above it
		}
		mid := float32((float64(v) + float64(next)) / 2)
		want := h
		if h&1 == 1 {
			want = h + 1
		}
		if got := f32ToF16(mid); got != want {
			t.Fatalf("halfway between %#04x and %#04x (%v): %#04x, want %#04x", h, h+1, mid, got, want)
		}
		above := math.Nextafter32(mid, float32(math.Copysign(math.Inf(1), float64(v))))
		if got := f32ToF16(above); got != h+1 {
			t.Fatalf("just past halfway between %#04x and %#04x: %#04x", h, h+1, got)
		}
	}
	if f32ToF16(70000) != 0x7c00 || f32ToF16(-70000) != 0xfc00 || f32ToF16(1e-10) != 0 {
		t.Error("overflow to inf or underflow to zero")
	}
	if f16ToF32(0x3c00) != 1 || f16ToF32(0x0001) != float32(math.Ldexp(1, -24)) || f16ToF32(0xc000) != -2 {
		t.Error("known halves")
	}
}

// bf16 rounds to nearest, ties to even; widening is exact.
func TestBF16Conversions(t *testing.T) {
	for _, c := range []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80}, {-2, 0xc000}, {1 + 1.0/256, 0x3f80}, {1 + 3.0/256, 0x3f82}, {1 + 1.0/256 + 1.0/65536, 0x3f81},
		{float32(math.Inf(1)), 0x7f80}, {math.MaxFloat32, 0x7f80}, {0, 0},
	} {
		if got := f32ToBF16(c.in); got != c.want {
			t.Errorf("bf16(%v) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	if v := f32ToBF16(float32(math.NaN())); v&0x7f80 != 0x7f80 || v&0x7f == 0 {
		t.Errorf("NaN → %#04x", v)
	}
}

package gpu

import "math"

// The MLP heads' passes on the CPU (native.go): what headForward and its gradient compute.

// nativeHeadRows is the number of rows of one unit of parallel work.
const nativeHeadRows = 512

// headGroup evaluates the head on n rows x (flat [n, In]) into y. With dy set, it then asks dy
// for the gradient of the objective at each output and adds the head's gradient to g (W1, b1,
// W2, b2 concatenated).
func (h *Head) headGroup(x []float32, n int, y []float32, dy func(y []float32) []float32, g []float64) {
	In, H := h.In, h.Hidden
	u, a, gd := make([]float32, n*H), make([]float32, n*H), make([]float32, n*H)
	mm(false, false, n, H, In, x, h.W1.Value, false, u)
	addRows(u, h.B1.Value)
	geluRows(u, a, gd)
	w2, b2 := h.W2.Value, h.B2.Value[0]
	for i := range n {
		var o float32
		for j, v := range a[i*H : (i+1)*H] {
			o += v * w2[j]
		}
		o += b2
		if h.Sigmoid {
			o = float32(1 / (1 + math.Exp(-float64(o))))
		}
		y[i] = o
	}
	if dy == nil {
		return
	}
	d := dy(y)
	gW1, gb1, gW2 := g[:In*H], g[In*H:In*H+H], g[In*H+H:In*H+2*H]
	du := u // the gradient at the pre-activations takes their place
	for i := range n {
		di := d[i]
		if h.Sigmoid {
			di *= y[i] * (1 - y[i])
		}
		g[len(g)-1] += float64(di)
		ai, gi, dui := a[i*H:(i+1)*H], gd[i*H:(i+1)*H], du[i*H:(i+1)*H]
		for j, w := range w2 {
			gW2[j] += float64(di * ai[j])
			v := di * w * gi[j]
			dui[j] = v
			gb1[j] += float64(v)
		}
	}
	tmp := make([]float32, In*H)
	mm(true, false, In, H, n, x, du, false, tmp)
	sum64(gW1, tmp)
}

// gradSize is the length of the head's concatenated gradient.
func (h *Head) gradSize() int { return h.In*h.Hidden + 2*h.Hidden + 1 }

// splitGrad cuts a concatenated gradient into the blocks of Params.
func (h *Head) splitGrad(g []float64) [][]float32 {
	In, H := h.In, h.Hidden
	return [][]float32{to32(g[:In*H]), to32(g[In*H : In*H+H]), to32(g[In*H+H : In*H+2*H]), to32(g[In*H+2*H:])}
}

// runNative evaluates the head on rows x (flat [n, In]) in groups on every core, returning the
// outputs and, with dy set (called per group with its first row and outputs), the gradient
// summed in group order.
func (h *Head) runNative(x []float32, n int, dy func(lo int, y []float32) []float32) ([]float32, []float64) {
	y := make([]float32, n)
	gs := groups(n, nativeHeadRows)
	partial := make([][]float64, len(gs))
	forEach(len(gs), func(k int) {
		lo, hi := gs[k][0], gs[k][1]
		var f func([]float32) []float32
		if dy != nil {
			partial[k] = make([]float64, h.gradSize())
			f = func(y []float32) []float32 { return dy(lo, y) }
		}
		h.headGroup(x[lo*h.In:hi*h.In], hi-lo, y[lo:hi], f, partial[k])
	})
	if dy == nil {
		return y, nil
	}
	total := make([]float64, h.gradSize())
	for _, p := range partial {
		for i, v := range p {
			total[i] += v
		}
	}
	return y, total
}

// mseNative is one FitMSE pass on the CPU in the graph's output layout: each head's MSE between
// its outputs and y over the n rows of x, then (with grad) the gradient of their sum, block by
// block.
func mseNative(heads []*Head, x []float32, y []float32, grad bool) [][]float32 {
	n := len(y)
	out := make([][]float32, len(heads))
	var grads [][]float32
	for k, h := range heads {
		// Squared errors summed group by group, then over groups in order, in both passes.
		sq := make([]float64, len(groups(n, nativeHeadRows)))
		sum := func(lo int, pred []float32) {
			s := 0.0
			for i, p := range pred {
				e := float64(p - y[lo+i])
				s += e * e
			}
			sq[lo/nativeHeadRows] = s
		}
		if grad {
			_, g := h.runNative(x, n, func(lo int, pred []float32) []float32 {
				sum(lo, pred)
				d := make([]float32, len(pred))
				for i, p := range pred {
					d[i] = 2 * (p - y[lo+i]) / float32(n)
				}
				return d
			})
			grads = append(grads, h.splitGrad(g)...)
		} else {
			pred, _ := h.runNative(x, n, nil)
			for _, r := range groups(n, nativeHeadRows) {
				sum(r[0], pred[r[0]:r[1]])
			}
		}
		total := 0.0
		for _, s := range sq {
			total += s
		}
		out[k] = []float32{float32(total / float64(n))}
	}
	return append(out, grads...)
}

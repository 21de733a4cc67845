package gpu

import (
	"math"
	"slices"

	"github.com/evosteer/evosteer-go/internal/policy"
)

// The policy network's update passes on the CPU (native.go): h_ρ for the residual inputs, and
// the gradient of Σ_d c_d·log π_θ(a_d|s_d) with respect to the adapter. They compute what
// encode, thetaLogits and maskedLogSoftmax compute, over each decision's legal actions only.

// nativeGroup is the number of decisions of one unit of parallel work, and nativeActionRows the
// action rows of one pass through the action layer within it (bounding its [rows, 2·hidden]
// buffers to a few hundred KiB).
const (
	nativeGroup      = 256
	nativeActionRows = 512
)

// nativeNet is one network's weights as float32 slices, [in, out] row-major: the frozen base, or
// θ's effective weights W + (α/r)·Aᵀ·Bᵀ (thetaWeights).
type nativeNet struct {
	ws1, bs1, ws2, bs2, wah, wad, ba, wo []float32
	bo                                   float32
}

func (p *PolicyNet) nativeBase() *nativeNet {
	b := p.Base
	return &nativeNet{ws1: b[baseWs1].Value, bs1: b[baseBs1].Value, ws2: b[baseWs2].Value, bs2: b[baseBs2].Value,
		wah: b[baseWah].Value, wad: b[baseWad].Value, ba: b[baseBa].Value, wo: b[baseWo].Value, bo: b[baseBo].Value[0]}
}

func (p *PolicyNet) nativeTheta() *nativeNet {
	n := *p.nativeBase()
	scale := float32(p.Scale())
	eff := func(w, a, b *Param) []float32 {
		in, out := w.Dims[0], w.Dims[1]
		d := make([]float32, in*out)
		mm(true, true, in, out, p.Rank, a.Value, b.Value, false, d)
		for i, v := range d {
			d[i] = w.Value[i] + v*scale
		}
		return d
	}
	b, ad := p.Base, p.Adapter
	n.ws1 = eff(b[baseWs1], ad[adAs1], ad[adBs1])
	n.ws2 = eff(b[baseWs2], ad[adAs2], ad[adBs2])
	n.wah = eff(b[baseWah], ad[adAah], ad[adBa])
	n.wad = eff(b[baseWad], ad[adAad], ad[adBa])
	n.wo = eff(b[baseWo], ad[adAo], ad[adBo])
	return &n
}

// encoderPass is the state encoder on n rows with what its backward pass needs: the normalised
// input x0, GELU′ at the first layer's pre-activations (d1), its normalised output x1, GELU′ at
// the second's (d2), and h; r0, r1, r2 are the RMS divisors.
type encoderPass struct {
	x0, d1, x1, d2, h []float32
	r0, r1, r2        []float32
}

// encodeNative runs the encoder of w on n states (flat [n, S]).
func (p *PolicyNet) encodeNative(w *nativeNet, states []float32, n int) *encoderPass {
	S, H, E := p.StateWidth, p.Hidden, p.EncoderDim
	e := &encoderPass{x0: make([]float32, n*S), d1: make([]float32, n*H), x1: make([]float32, n*H),
		d2: make([]float32, n*E), h: make([]float32, n*E), r0: make([]float32, n), r1: make([]float32, n), r2: make([]float32, n)}
	rmsRows(states, e.x0, e.r0, S)
	u1 := make([]float32, n*H)
	mm(false, false, n, H, S, e.x0, w.ws1, false, u1)
	addRows(u1, w.bs1)
	geluRows(u1, u1, e.d1)
	rmsRows(u1, e.x1, e.r1, H)
	u2 := make([]float32, n*E)
	mm(false, false, n, E, H, e.x1, w.ws2, false, u2)
	addRows(u2, w.bs2)
	geluRows(u2, u2, e.d2)
	rmsRows(u2, e.h, e.r2, E)
	return e
}

// encodeRowsNative is Encode on the CPU: h_ρ(s) of every row, groups of rows on every core.
func (p *PolicyNet) encodeRowsNative(batch []PolicyRow) [][]float32 {
	base, S, E := p.nativeBase(), p.StateWidth, p.EncoderDim
	out := make([][]float32, len(batch))
	gs := groups(len(batch), nativeGroup)
	forEach(len(gs), func(g int) {
		lo, hi := gs[g][0], gs[g][1]
		states := make([]float32, (hi-lo)*S)
		for i := lo; i < hi; i++ {
			copy(states[(i-lo)*S:], batch[i].State)
		}
		h := p.encodeNative(base, states, hi-lo).h
		for i := lo; i < hi; i++ {
			out[i] = h[(i-lo)*E : (i-lo+1)*E : (i-lo+1)*E]
		}
	})
	return out
}

// policyGrads are the gradients at θ's effective weights (the adapter's follow in adapterGrads).
type policyGrads struct{ ws1, ws2, wah, wad, wo []float64 }

func (p *PolicyNet) newPolicyGrads() *policyGrads {
	S, H, E, A := p.StateWidth, p.Hidden, p.EncoderDim, policy.ActionWidth
	return &policyGrads{ws1: make([]float64, S*H), ws2: make([]float64, H*E), wah: make([]float64, E*H),
		wad: make([]float64, A*H), wo: make([]float64, H)}
}

func (g *policyGrads) add(o *policyGrads) {
	for _, pair := range [][2][]float64{{g.ws1, o.ws1}, {g.ws2, o.ws2}, {g.wah, o.wah}, {g.wad, o.wad}, {g.wo, o.wo}} {
		for i, v := range pair[1] {
			pair[0][i] += v
		}
	}
}

// gradientNative returns the gradient of Σ_d cTheta_d·log π_θ(a_d|s_d) with respect to the
// adapter (in Adapter order) and log π_θ(a_d|s_d) of every decision; hRho holds each decision's
// h_ρ(s) (Encode's), chosen the index of its action among the legal ones. Rows are checked by
// the caller (pack).
func (p *PolicyNet) gradientNative(rows []PolicyRow, chosen []int, hRho [][]float32, cTheta []float32) ([][]float32, []float64) {
	th, base := p.nativeTheta(), p.nativeBase()
	// θ's and the base's action weights side by side, so one matmul gives both pre-activations.
	wad2 := sideBySide(th.wad, base.wad, policy.ActionWidth, p.Hidden)
	logp := make([]float64, len(rows))
	gs := groups(len(rows), nativeGroup)
	partial := make([]*policyGrads, len(gs))
	forEach(len(gs), func(g int) {
		lo, hi := gs[g][0], gs[g][1]
		partial[g] = p.gradientGroup(th, base, wad2, rows[lo:hi], chosen[lo:hi], hRho[lo:hi], cTheta[lo:hi], logp[lo:hi])
	})
	total := p.newPolicyGrads()
	for _, g := range partial {
		total.add(g)
	}
	return p.adapterGrads(total), logp
}

// gradientGroup is gradientNative on one group of decisions; it fills logp and returns the
// group's gradients at θ's effective weights.
func (p *PolicyNet) gradientGroup(th, base *nativeNet, wad2 []float32, rows []PolicyRow, chosen []int, hRho [][]float32, cTheta []float32, logp []float64) *policyGrads {
	S, H, E, A := p.StateWidth, p.Hidden, p.EncoderDim, policy.ActionWidth
	n := len(rows)
	grads := p.newPolicyGrads()
	states, hb := make([]float32, n*S), make([]float32, n*E)
	for i, r := range rows {
		copy(states[i*S:], r.State)
		copy(hb[i*E:], hRho[i])
	}
	enc := p.encodeNative(th, states, n)
	phT, phB := make([]float32, n*H), make([]float32, n*H)
	mm(false, false, n, H, E, enc.h, th.wah, false, phT)
	addRows(phT, th.ba)
	mm(false, false, n, H, E, hb, base.wah, false, phB)
	addRows(phB, base.ba)

	dph := make([]float32, n*H)       // gradient at θ's state term h·W_ah + b_a
	var acts, pre, gd, dpre []float32 // gd: GELU′ at θ's action pre-activations
	var logits, dz []float32          // one decision's
	gwad, gwo := make([]float32, A*H), make([]float32, H)
	for d0 := 0; d0 < n; {
		d1, R := actionRun(rows, d0)
		acts, pre = actionLayer(rows, d0, d1, R, H, wad2, acts, pre)
		if cap(gd) < R*H {
			gd, dpre = make([]float32, R*H), make([]float32, R*H)
		}
		gd, dpre = gd[:R*H], dpre[:R*H]

		clear(gwo)
		off := 0
		for d := d0; d < d1; d++ {
			K := rows[d].Legal()
			if K == 1 { // log π = 0, no gradient
				logp[d] = 0
				clear(dpre[off*H : (off+1)*H])
				off++
				continue
			}
			if cap(logits) < K {
				logits, dz = make([]float32, K), make([]float32, K)
			}
			logits, dz = logits[:K], dz[:K]
			ptT, ptB := phT[d*H:(d+1)*H], phB[d*H:(d+1)*H]
			for a := range K {
				r := off + a
				row, dr := pre[r*2*H:(r+1)*2*H], gd[r*H:(r+1)*H]
				var zt, zb float32
				for j, wt := range th.wo[:H] {
					y, dy := geluBoth(row[j] + ptT[j])
					row[j], dr[j] = y, dy // θ's activation replaces its pre-activation
					zt += y * wt
					zb += gelu32(row[H+j]+ptB[j]) * base.wo[j]
				}
				logits[a] = rows[d].Prior[a] + ((zt + th.bo) - (zb + base.bo))
			}
			logp[d] = logSoftmaxGrad(logits, chosen[d], cTheta[d], dz)
			for a, g := range dz {
				r := off + a
				act, dr, dp := pre[r*2*H:r*2*H+H], gd[r*H:(r+1)*H], dpre[r*H:(r+1)*H]
				if g == 0 {
					clear(dp)
					continue
				}
				acc := dph[d*H : (d+1)*H]
				for j, y := range act {
					gwo[j] += g * y
					v := g * th.wo[j] * dr[j]
					dp[j] = v
					acc[j] += v
				}
			}
			off += K
		}
		mm(true, false, A, H, R, acts, dpre, false, gwad)
		sum64(grads.wad, gwad)
		sum64(grads.wo, gwo)
		d0 = d1
	}

	// Back through the state term and θ's encoder.
	tmp := make([]float32, max(E*H, S*H))
	mm(true, false, E, H, n, enc.h, dph, false, tmp[:E*H])
	sum64(grads.wah, tmp[:E*H])
	dh := make([]float32, n*E)
	mm(false, true, n, E, H, dph, th.wah, false, dh)
	rmsBack(enc.h, enc.r2, dh, E)
	mulRows(dh, enc.d2)
	mm(true, false, H, E, n, enc.x1, dh, false, tmp[:H*E])
	sum64(grads.ws2, tmp[:H*E])
	dx1 := make([]float32, n*H)
	mm(false, true, n, H, E, dh, th.ws2, false, dx1)
	rmsBack(enc.x1, enc.r1, dx1, H)
	mulRows(dx1, enc.d1)
	mm(true, false, S, H, n, enc.x0, dx1, false, tmp[:S*H])
	sum64(grads.ws1, tmp[:S*H])
	return grads
}

// actionRun is the run of whole decisions rows[d0:d1] that starts at d0 and holds about
// nativeActionRows legal actions (at least one decision), and its R legal actions: the unit of
// one pass through the action layer.
func actionRun(rows []PolicyRow, d0 int) (d1, R int) {
	d1 = d0
	for d1 < len(rows) && (d1 == d0 || R+rows[d1].Legal() <= nativeActionRows) {
		R += rows[d1].Legal()
		d1++
	}
	return d1, R
}

// actionLayer fills acts with the normalised descriptors of the R legal actions of decisions
// rows[d0:d1] ([R, ActionWidth]) and pre with both networks' action-layer products of them side
// by side ([R, 2·hidden], wad2 = sideBySide(θ's W_ad, the base's)), reusing the buffers when they
// are large enough.
func actionLayer(rows []PolicyRow, d0, d1, R, H int, wad2, acts, pre []float32) ([]float32, []float32) {
	A := policy.ActionWidth
	if cap(acts) < R*A || cap(pre) < R*2*H {
		acts, pre = make([]float32, R*A), make([]float32, R*2*H)
	}
	acts, pre = acts[:R*A], pre[:R*2*H]
	off := 0
	for d := d0; d < d1; d++ {
		copy(acts[off*A:], rows[d].Actions)
		off += rows[d].Legal()
	}
	rmsRows(acts, acts, make([]float32, R), A)
	mm(false, false, R, 2*H, A, acts, wad2, false, pre)
	return acts, pre
}

// logSoftmaxGrad returns log π(chosen) under the log-softmax of logits (float32, as the scores
// file holds it) and sets dz to the gradient of c·log π(chosen): c·(1[a = chosen] − π(a)). A
// single legal action has log π = 0 and no gradient.
func logSoftmaxGrad(logits []float32, chosen int, c float32, dz []float32) float64 {
	if len(logits) == 1 {
		dz[0] = 0
		return 0
	}
	m := logits[0]
	for _, v := range logits[1:] {
		m = max(m, v)
	}
	s := 0.0
	for _, v := range logits {
		s += math.Exp(float64(v - m))
	}
	lse := math.Log(s)
	for a, v := range logits {
		pi := math.Exp(float64(v-m) - lse)
		oh := 0.0
		if a == chosen {
			oh = 1
		}
		dz[a] = float32(float64(c) * (oh - pi))
	}
	return float64(float32(float64(logits[chosen]-m) - lse))
}

// adapterGrads turns gradients at the effective weights W + s·Aᵀ·Bᵀ (s = α/r) into the
// adapter's, in Adapter order: ∂A = s·(G·B)ᵀ and ∂B = s·Gᵀ·Aᵀ, the action layer's B summing
// its state and action parts.
func (p *PolicyNet) adapterGrads(g *policyGrads) [][]float32 {
	s, ad := p.Scale(), p.Adapter
	lora := func(G []float64, a, b *Param) (dA, dB []float64) {
		r, in, out := a.Dims[0], a.Dims[1], b.Dims[0]
		dA, dB = make([]float64, r*in), make([]float64, out*r)
		for i := range in {
			for j := range out {
				gij := s * G[i*out+j]
				if gij == 0 {
					continue
				}
				for k := range r {
					dA[k*in+i] += gij * float64(b.Value[j*r+k])
					dB[j*r+k] += gij * float64(a.Value[k*in+i])
				}
			}
		}
		return dA, dB
	}
	out := make([][]float32, len(ad))
	for _, l := range []struct {
		g      []float64
		ia, ib int
	}{{g.ws1, adAs1, adBs1}, {g.ws2, adAs2, adBs2}, {g.wo, adAo, adBo}} {
		dA, dB := lora(l.g, ad[l.ia], ad[l.ib])
		out[l.ia], out[l.ib] = to32(dA), to32(dB)
	}
	dAh, dBh := lora(g.wah, ad[adAah], ad[adBa])
	dAd, dBd := lora(g.wad, ad[adAad], ad[adBa])
	for i, v := range dBd {
		dBh[i] += v
	}
	out[adAah], out[adAad], out[adBa] = to32(dAh), to32(dAd), to32(dBh)
	return out
}

// mergedTheta is θ's effective weights for scoring, with the adapter values they were merged
// from: rollouts score thousands of decisions with one learner, so the merge (a rank-r product
// per layer) is paid once per learner, not once per call.
type mergedTheta struct {
	net     *nativeNet
	wad2    []float32   // θ's and the base's action weights side by side, [A, 2·hidden]
	adapter [][]float32 // copies of the adapter values merged
}

// merged returns θ's effective weights, merging again only when the adapter changed since the
// last merge (an update in place).
func (p *PolicyNet) merged() *mergedTheta {
	p.mergeMu.Lock()
	defer p.mergeMu.Unlock()
	if m := p.mergedCache; m != nil && len(m.adapter) == len(p.Adapter) {
		same := true
		for i, a := range p.Adapter {
			if !slices.Equal(m.adapter[i], a.Value) {
				same = false
				break
			}
		}
		if same {
			return m
		}
	}
	th, base := p.nativeTheta(), p.nativeBase()
	m := &mergedTheta{net: th, wad2: sideBySide(th.wad, base.wad, policy.ActionWidth, p.Hidden)}
	for _, a := range p.Adapter {
		m.adapter = append(m.adapter, slices.Clone(a.Value))
	}
	p.mergedCache = m
	return m
}

// sideBySide puts two [rows, w] matrices side by side, [rows, 2w], so one matmul gives both
// products.
func sideBySide(a, b []float32, rows, w int) []float32 {
	out := make([]float32, rows*2*w)
	for k := range rows {
		copy(out[k*2*w:], a[k*w:(k+1)*w])
		copy(out[k*2*w+w:], b[k*w:(k+1)*w])
	}
	return out
}

// scoreNative is Score on the CPU: the same functions as the graph (encode, thetaLogits,
// maskedLogSoftmax) over each decision's exact legal actions, groups of decisions on every core.
// Every matmul computes each output row from its own input row alone, in a fixed order, so a
// row's scores depend neither on its batch nor on the number of cores: rescore reproduces the
// rollout's behaviour log-probabilities bit for bit.
func (p *PolicyNet) scoreNative(batch []PolicyRow) *Scores {
	m, base := p.merged(), p.nativeBase()
	th := m.net
	S, H, E := p.StateWidth, p.Hidden, p.EncoderDim
	s := &Scores{Theta: make([][]float32, len(batch)), Rho: make([][]float32, len(batch)), H: make([][]float32, len(batch))}
	gs := groups(len(batch), nativeGroup)
	forEach(len(gs), func(g int) {
		lo, hi := gs[g][0], gs[g][1]
		rows, n := batch[lo:hi], hi-lo
		states := make([]float32, n*S)
		for i, r := range rows {
			copy(states[i*S:], r.State)
		}
		hT, hB := p.encodeNative(th, states, n).h, p.encodeNative(base, states, n).h
		phT, phB := make([]float32, n*H), make([]float32, n*H)
		mm(false, false, n, H, E, hT, th.wah, false, phT)
		addRows(phT, th.ba)
		mm(false, false, n, H, E, hB, base.wah, false, phB)
		addRows(phB, base.ba)
		var acts, pre []float32
		for d0 := 0; d0 < n; {
			d1, R := actionRun(rows, d0)
			acts, pre = actionLayer(rows, d0, d1, R, H, m.wad2, acts, pre)
			off := 0
			for d := d0; d < d1; d++ {
				K := rows[d].Legal()
				logits := make([]float32, K)
				ptT, ptB := phT[d*H:(d+1)*H], phB[d*H:(d+1)*H]
				for a := range K {
					row := pre[(off+a)*2*H : (off+a+1)*2*H]
					var zt, zb float32
					for j, wt := range th.wo[:H] {
						zt += gelu32(row[j]+ptT[j]) * wt
						zb += gelu32(row[H+j]+ptB[j]) * base.wo[j]
					}
					logits[a] = rows[d].Prior[a] + ((zt + th.bo) - (zb + base.bo))
				}
				s.Theta[lo+d] = logSoftmax32(logits)
				s.Rho[lo+d] = logSoftmax32(slices.Clone(rows[d].Prior))
				off += K
			}
			d0 = d1
		}
		for i := range n {
			s.H[lo+i] = hB[i*E : (i+1)*E : (i+1)*E]
		}
	})
	return s
}

// logSoftmax32 turns logits into log-probabilities in place (float64 sums): exactly 0 for a
// single legal action.
func logSoftmax32(logits []float32) []float32 {
	if len(logits) == 1 {
		logits[0] = 0
		return logits
	}
	hi := logits[0]
	for _, v := range logits[1:] {
		hi = max(hi, v)
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v - hi))
	}
	lse := float32(math.Log(sum))
	for i, v := range logits {
		logits[i] = v - hi - lse
	}
	return logits
}

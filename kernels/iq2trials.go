package kernels

// The trial scales of IQ2_XXS (13 on 32 values) and IQ2_XS/IQ2_S (19 on
// 16) with the assembly (iqAsm): the levels of every trial at once, 8
// trials to a vector (iq2TrialLevels); the codes off the grid then go to
// their best neighbour here, one by one, as in the plain loop; then each
// trial's fit, Σ w·x·q and Σ w·q², in the values' order (iq2TrialFit), and
// the trials compared in ggml's order. Every number is the one the plain
// loop computes, so the choice is the same (TestIQ2Trials).

// iq2Trials is the state of those searches (offsets fixed in
// iqsearch_amd64.s, checked by TestIQ2TrialsLayout).
type iq2Trials struct {
	x, w, wx [32]float32   // the magnitudes, their weights, and w·x
	id       [24]float32   // the trials' inverse scales (the rest 1)
	lv       [32][24]int32 // value i's level under trial t
	code     [4][24]int32  // group k's code under trial t
	sqx, sq2 [24]float32   // trial t's Σ w·x·q and Σ w·q²
}

// run fills lv, code (the levels after the neighbour search), sqx and sq2
// for the n values in tr.x, tr.w and tr.wx and the nt trials in tr.id;
// waux are the weights of the neighbour search.
func (tr *iq2Trials) run(s *iqSearch, n, nt int, waux []float32) {
	for t := nt; t < len(tr.id); t++ {
		tr.id[t] = 1
	}
	nvec := (nt + 7) / 8
	iq2TrialLevels(tr, n/8, nvec)
	for t := range nt {
		for k := range n / 8 {
			u := int(tr.code[k][t])
			if s.kmap[u] >= 0 {
				continue
			}
			var l [8]uint8
			s.nearest(u, tr.x[8*k:], waux[8*k:], 1/tr.id[t], l[:])
			for i, v := range l {
				tr.lv[8*k+i][t] = int32(v)
			}
		}
	}
	iq2TrialFit(tr, n, nvec)
}

// set copies n magnitudes and weights in.
// best runs the nt trial scales (5 + 0.1·(t - nt/2))/maxv on the values x
// (weights w, their square roots waux) and returns the trial of the best fit,
// chosen in ggml's order by its strict comparison (-1 when none fits), and its
// scale (scale when none fits).
func (tr *iq2Trials) best(s *iqSearch, x, w, waux []float32, maxv float32, nt int, scale float32) (int, float32) {
	n := len(x)
	tr.set(x, w, n)
	for t := range nt {
		tr.id[t] = (float32(float32(t-nt/2)*0.1) + 5) / maxv
	}
	tr.run(s, n, nt, waux)
	var best float32
	bt := -1
	for t := range nt {
		if sumqx, sumq2 := tr.sqx[t], tr.sq2[t]; sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
			scale = sumqx / sumq2
			best = scale * sumqx
			bt = t
		}
	}
	return bt, scale
}

func (tr *iq2Trials) set(x, w []float32, n int) {
	for i := range n {
		tr.x[i], tr.w[i], tr.wx[i] = x[i], w[i], float32(w[i]*x[i])
	}
}

// levels copies trial t's levels of the first len(L) values to L.
func (tr *iq2Trials) levels(t int, L []uint8) {
	for i := range L {
		L[i] = uint8(tr.lv[i][t])
	}
}

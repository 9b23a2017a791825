package learn

import "math"

// The exploration budget (Config.Budget): a key starts on the model's
// pick and learns only as far as its own calls pay for it.
//
// A key's time so far (entry.elapsed) is its calls priced at the
// incumbent's estimate: the frozen reference, or the incumbent's samples,
// or before any sample the model's price. What learning has cost it
// (entry.spent) is, for every committed sample, the tuner's overhead per
// recorded call (Tuner.overhead) and, for a sample of another arm than
// the incumbent, its time beyond the incumbent's estimate; a candidate's
// warm-up calls are charged like its samples. Every term is an agreed
// value (committed samples, call counts, the agreed overhead), so every
// rank keeps the same books and takes the same decisions.
//
// A trial samples the incumbent and one candidate: the incumbent's R
// calls (seeded from its drift window when it has one) and the
// candidate's warm-up and R calls, back to back. Its expected cost is
// the candidate's R+1 calls at the model's ratio to the incumbent's
// estimate beyond that estimate, plus 2R recorded calls' overhead. The
// trial starts at the commit where the key's credit (Budget x elapsed -
// spent) covers it and two of the incumbent's calls more (the margin for
// a mispriced candidate, below); until then the key's due call, computed at each
// commit from the incumbent's estimate, is the first at which it will.
// A candidate whose first sample exceeds ProbeReject times the
// incumbent's estimate gets no more calls, so a candidate the model
// misprices costs at most its warm-up and one sample beyond the
// expectation: the constant above the budget's fraction. That first
// sample ends the batch, and while the engine holds the tuner for its
// commit the key runs the incumbent (Tuner.next), so the verdict comes
// before the candidate's next call however long the commit takes.
//
// Candidates: the arms the model prices within Candidates times its pick
// (within Reject squared once the key's own evidence shows the model wrong
// there: a trial beat the pick, or the pick's measured time is off its
// price by more than half), nearest first, and first of all the arm
// the next smaller size bucket moved to on its own evidence. A trial
// that finds its candidate faster than the incumbent by Improve makes it
// the incumbent. Each arm is tried once; a drift (Strikes windows in a
// row) makes every arm a candidate again.

// budgeted reports whether the tuner learns under Config.Budget.
func (t *Tuner) budgeted() bool { return t.cfg.budgeted() }

func (c *Config) budgeted() bool { return c.Mode == ModeLearn && c.Budget >= 0 }

// overhead is the tuner's overhead per recorded call: the ranks' agreed
// measurement, or until there is one Config.OverheadGuess (budgeted
// tuners only: without a budget, 0).
func (t *Tuner) overhead() float64 {
	if t.ovh > 0 || !t.budgeted() {
		return t.ovh
	}
	return t.cfg.OverheadGuess
}

// ref is the incumbent's estimated time per call.
func (e *entry) ref() float64 {
	if e.est > 0 {
		return e.est
	}
	if s := &e.st[e.cur]; s.n > 0 && s.est > 0 {
		return s.est
	}
	return e.prior[e.cur]
}

// startAt makes arm idx the key's incumbent and the model's pick: frozen
// on it, every other arm a candidate.
func (t *Tuner) startAt(e *entry, idx int) {
	c := &t.cfg
	e.cur, e.pick, e.cand, e.probing = uint8(idx), uint8(idx), -1, false
	clear(e.tried)
	e.tried[idx] = true
	e.freeze(0, c)
	e.confirmed = true // the budget's trials replace the scheduled confirmation
	e.stride = max(e.stride, e.strideFloor(c, t.overhead()))
	t.schedule(e)
}

// charge books a committed sample of arm a that cost cost seconds per
// call over w calls.
func (t *Tuner) charge(e *entry, a uint8, cost float64, w int) {
	if !(cost >= 0) || math.IsInf(cost, 0) {
		return
	}
	e.spent += float64(w) * t.overhead()
	if a != e.cur {
		e.spent += float64(w) * max(0, cost-e.ref())
	}
}

// settle brings the key's books up to date at a commit: its calls since
// the last one at the incumbent's estimate, the candidate's warm-ups at
// its estimate (the model's ratio before its first sample).
func (t *Tuner) settle(e *entry) {
	ref := e.ref()
	e.elapsed += float64(e.calls-e.acc) * ref
	e.acc = e.calls
	if e.warmups > 0 && e.cand >= 0 {
		e.spent += float64(e.warmups) * max(0, e.armTime(int(e.cand))-ref)
	}
	e.warmups = 0
}

// armTime is arm a's estimated time per call: its samples, or the
// model's ratio to the incumbent applied to the incumbent's estimate.
func (e *entry) armTime(a int) float64 {
	if s := &e.st[a]; s.n > 0 && s.est > 0 {
		return s.est
	}
	ref := e.ref()
	if p := e.prior[e.cur]; p > 0 {
		return ref * e.prior[a] / p
	}
	return ref
}

// trialCost is what trying candidate a is expected to cost the key.
func (t *Tuner) trialCost(e *entry, a int) float64 {
	r := float64(t.cfg.SamplesPerArm)
	return (r+1)*max(0, e.armTime(a)-e.ref()) + 2*r*t.overhead()
}

// nextCandidate returns the arm to try next, or -1.
func (t *Tuner) nextCandidate(e *entry) int {
	c := &t.cfg
	// The next smaller bucket's incumbent, where it left the model's
	// pick on its own evidence: neighbouring sizes tend to share a
	// winner.
	if e.key.SizeLog2 > 0 {
		k := e.key
		k.SizeLog2--
		if nb := t.keys[pack(k)]; nb != nil && nb.tried != nil && nb.cur != nb.pick {
			if i := e.set.index(nb.set.arms[nb.cur]); i >= 0 && !e.tried[i] {
				return i
			}
		}
	}
	bound := c.Candidates
	if e.cur != e.pick {
		bound = max(bound, c.Reject*c.Reject) // a trial beat the model's pick
	} else if p := e.prior[e.cur]; p > 0 && (e.est > 0 || e.st[e.cur].n > 0) {
		if r := e.ref() / p; r > 1.5 || r < 1/1.5 {
			bound = max(bound, c.Reject*c.Reject) // the pick's price is off
		}
	}
	best := -1
	lim := bound * e.prior[e.pick]
	for i := range e.set.arms {
		if e.tried[i] || !(e.prior[i] <= lim) {
			continue
		}
		if best < 0 || e.prior[i] < e.prior[best] {
			best = i
		}
	}
	return best
}

// schedule sets the key's due call, or starts the next trial now when
// the key's credit covers it. Called for a frozen key at a commit (and
// when the key is made).
func (t *Tuner) schedule(e *entry) {
	c := &t.cfg
	e.due = 0
	if e.state != Frozen || e.probing {
		return
	}
	a := t.nextCandidate(e)
	if a < 0 {
		return
	}
	// The expected cost, plus a margin of two of the incumbent's calls:
	// what a candidate the model misprices can cost beyond it before its
	// first sample drops it (its warm-up and that sample). So a key
	// tries nothing before its calls have earned that much, about 100
	// calls at 2%: on the device a 64 MiB key tried a candidate within
	// its first 10 calls and those calls ran 1.3x the model's plan.
	cost := t.trialCost(e, a) + 2*e.ref()
	credit := c.Budget*e.elapsed - e.spent
	if credit >= cost && e.calls > 0 {
		t.startTrial(e, a)
		return
	}
	rate := c.Budget * e.ref() // credit earned per call
	if !(rate > 0) || math.IsInf(rate, 0) {
		return
	}
	calls := math.Ceil((cost - credit) / rate)
	if !(calls < float64(math.MaxInt32)) {
		return
	}
	e.due = e.acc + uint64(max(calls, 1))
}

// startTrial starts the trial of candidate a: the incumbent's samples
// (its drift window's first) and the candidate's.
func (t *Tuner) startTrial(e *entry, a int) {
	c := &t.cfg
	for i := range e.st {
		e.st[i] = armStat{}
	}
	cur := &e.st[e.cur]
	for _, v := range e.win[max(0, e.nwin-maxSamples):e.nwin] {
		cur.add(v, c.Stat)
	}
	e.nwin, e.strikes = 0, 0
	e.state, e.cand, e.probing, e.due = Exploring, int16(a), true, 0
	e.moves = 0
	e.episodes++
	e.advance(c)
}

// trialAdvance ends a trial once both arms are measured: the candidate
// becomes the incumbent when it is faster by Improve.
func (e *entry) trialAdvance(c *Config) {
	r := e.samplesPerArm(c)
	cur, cand := int(e.cur), int(e.cand)
	if !e.st[cur].measured(r) || !e.st[cand].measured(r) {
		e.scheduleCalls(c)
		return
	}
	if s := &e.st[cand]; !s.rejected && s.est < e.st[cur].est*(1-c.Improve) {
		e.cur = uint8(cand)
	}
	e.tried[cand] = true
	e.freeze(0, c)
	e.cand, e.probing = -1, false
}

// afterAdvance is the budget's step after the state machine's: a frozen
// key's next trial, now or at its due call.
func (t *Tuner) afterAdvance(e *entry) {
	if e.state == Frozen && !e.probing {
		t.schedule(e)
	}
}

// restartTrials makes every arm but the incumbent a candidate again
// (a drift: the machine changed, and so may the arms' order).
func (e *entry) restartTrials() {
	clear(e.tried)
	e.tried[e.cur] = true
	e.strikes, e.est, e.nwin = 0, 0, 0
	e.episodes++
}

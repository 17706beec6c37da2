package serve

import (
	"math"
	"sync"
	"time"

	"github.com/qpengine/qp/internal/linfit"
)

// costModel learns, from the batches the processor ran, two things the
// batcher needs to keep latency bounded (issue 25 §2, §3):
//
//   - the time of a batch of n queries, fitted as t(n) = a + b·n by
//     exponentially weighted least squares over the recent batches (a: the
//     fixed cost of a batch, launches and hand-offs; b: the marginal cost of
//     one query). The batcher takes at most the n with t(n) <= its budget,
//     so that a request waits at most about two budgets (the batch running
//     when it arrives, then its own) however long the queue.
//   - the processor's throughput while saturated: queries answered per
//     second over the intervals between two batch completions that both
//     found queries waiting (the processor had work throughout, so the
//     rate is its capacity, not the arrival rate). depth/rate is the wait
//     a request arriving now can expect; the server sheds requests that
//     would wait past their deadline instead of letting them time out.
//
// The fit's weights decay by costDecay per batch (0.95: the last ~20
// batches count), so it follows a change of query mix within a few dozen
// batches; the throughput's decay with time (rateWindow). All methods are
// safe for concurrent use.
type costModel struct {
	mu sync.Mutex
	// Weighted sums of 1, n, t, n², n·t over the batches (t in seconds;
	// internal/linfit's fit, shared with the scheduler's batch model).
	sums linfit.Sums
	// Saturated throughput: weighted sums of the queries answered and the
	// seconds they took over saturated intervals; the rate is their ratio
	// (not a mean of per-interval rates, which the near-simultaneous
	// completions of parallel slots would inflate).
	rateN, rateT float64
	lastDone     time.Time // the previous completion that found queries waiting
	lastBusy     bool
}

const costDecay = 0.95

// minSpread is the least coefficient of variation of the recent batch
// sizes from which autoBatch trusts the fit's fixed cost.
const minSpread = 0.25

// rateWindow is the time constant of the saturated throughput's average:
// intervals weigh exp(-age/rateWindow), so the rate covers about the last
// second of saturated work whatever the batch size (a per-batch weight
// would cover 20 single-query batches, a few milliseconds, and swing with
// every pause of the process).
const rateWindow = time.Second

// observe records a batch of n queries that took d, finishing at end, and
// whether queries were waiting when it finished (waiting > 0).
func (m *costModel) observe(n int, d time.Duration, end time.Time, waiting int) {
	if n <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	x, t := float64(n), d.Seconds()
	m.sums.Decay(costDecay)
	m.sums.Add(x, t, 1)
	busy := waiting > 0
	if busy && m.lastBusy {
		if dt := end.Sub(m.lastDone).Seconds(); dt >= 0 {
			f := math.Exp(-dt / rateWindow.Seconds())
			m.rateN = f*m.rateN + x
			m.rateT = f*m.rateT + dt
		}
	}
	m.lastDone, m.lastBusy = end, busy
}

// fit returns a and b of t(n) = a + b·n (seconds); ok is false before any
// batch. When the batches seen all had about the same size (no slope to
// fit) or the fit is not increasing, b is the mean time per query and a 0.
func (m *costModel) fit() (a, b float64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fitLocked()
}

func (m *costModel) fitLocked() (a, b float64, ok bool) {
	if m.sums.W == 0 || m.sums.X == 0 {
		return 0, 0, false
	}
	a, b, _ = m.sums.Solve() // 0, 0 when undetermined: the fallback below
	if b <= 0 || a < 0 {
		a, b = 0, m.sums.MeanRatio()
	}
	return a, b, b > 0
}

// maxBatch is the most queries whose expected time t(n) fits budget (at
// least 1), or limit when the model knows nothing yet or budget <= 0.
func (m *costModel) maxBatch(budget time.Duration, limit int) int {
	if budget <= 0 {
		return limit
	}
	a, b, ok := m.fit()
	if !ok {
		return limit
	}
	n := (budget.Seconds()-a)/b + 1e-9 // 8.999999 queries are 9
	if n < 1 {
		return 1
	}
	if n >= float64(limit) {
		return limit
	}
	return int(n)
}

// predict is the expected time of a batch of n queries (ok false before
// any batch).
func (m *costModel) predict(n int) (d time.Duration, ok bool) {
	a, b, ok := m.fit()
	if !ok {
		return 0, false
	}
	return time.Duration((a + b*float64(n)) * float64(time.Second)), true
}

// autoBatch is the size whose expected time has the fixed cost a as the
// share s of it (a = s·(a + b·n): n = a(1-s)/(s·b)), within [1, limit];
// limit when the fit has no fixed cost, is not known yet, or rests on
// batches of too alike sizes (their sizes' coefficient of variation below
// minSpread: the intercept a is then noise, and a small one would cap the
// batches, and the throughput, for nothing; under a steady backlog the
// capped batches lose their spread and a batch of limit restores it).
func (m *costModel) autoBatch(s float64, limit int) int {
	m.mu.Lock()
	sm := m.sums
	a, b, ok := m.fitLocked()
	m.mu.Unlock()
	if !ok || a <= 0 || sm.W*sm.XX-sm.X*sm.X < minSpread*minSpread*sm.X*sm.X {
		return limit
	}
	n := a*(1-s)/(s*b) + 1e-9 // 8.999999 queries are 9
	if n >= float64(limit) {
		return limit
	}
	return max(1, int(n))
}

// capacity is the saturated throughput in queries/second (0: not measured
// yet: the processor has not been saturated).
func (m *costModel) capacity() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rateT <= 0 {
		return 0
	}
	return m.rateN / m.rateT
}

// expectedWait is how long a query joining a queue of depth queries can
// expect to wait for its batch to start: depth over the saturated
// throughput; 0 when that is not known (no saturation seen).
func (m *costModel) expectedWait(depth int) time.Duration {
	r := m.capacity()
	if r <= 0 || depth <= 0 {
		return 0
	}
	s := float64(depth) / r
	if s > 3600 {
		s = 3600
	}
	return time.Duration(math.Round(s * float64(time.Second)))
}

package serve

import (
	"math"
	"testing"
	"time"
)

// TestPipeBound: the pipelined GPU's latency floor (pipebound.go) on the
// fifteenth session's AND fit (a = 3.13 ms, b = 4.56 µs) at 80% of the
// in-process rate (160,633 q/s): the batch holds one cycle's arrivals,
// the p99 is 0.99 cycle + preparation + device phase, the slower stage
// sets the cycle, a rate beyond 1/b has no stable batch, and Need's costs
// put the p99 on the target.
func TestPipeBound(t *testing.T) {
	m := PipeModel{DeviceA: 3.13e-3, DeviceB: 4.56e-6}
	const rate = 160633.0
	r := m.Bound(rate, 0.99)
	wantN := rate * m.DeviceA / (1 - rate*m.DeviceB) // 1,879.6
	wantD := m.DeviceA + m.DeviceB*wantN             // 11.70 ms
	if !r.Stable || math.Abs(r.Batch-wantN) > 1e-6 || math.Abs(r.Batch-rate*wantD) > 1e-6 {
		t.Fatalf("batch %v, want %v = rate × D(n)", r.Batch, wantN)
	}
	if d := r.Latency - sec(1.99*wantD); d < -time.Microsecond || d > time.Microsecond || r.Prep != 0 || r.Device != r.Period {
		t.Fatalf("p99 %v, want 1.99 × %v; %+v", r.Latency, sec(wantD), r)
	}
	if r.Latency < 23*time.Millisecond || r.Latency > 24*time.Millisecond {
		t.Errorf("p99 floor %v, want 23.3 ms", r.Latency)
	}
	// A preparation of 2 ms + 0 per query adds to every query's latency.
	mp := m
	mp.PrepA = 2e-3
	if rp := mp.Bound(rate, 0.99); rp.Latency-r.Latency != 2*time.Millisecond || rp.Batch != r.Batch {
		t.Errorf("with 2 ms of preparation: %+v, without %+v", rp, r)
	}
	// Preparation slower than the device: it sets the cycle.
	slow := PipeModel{DeviceA: 1e-3, DeviceB: 1e-6, PrepA: 2e-3, PrepB: 2e-6}
	rs := slow.Bound(100000, 0.5)
	if n := 100000 * 2e-3 / (1 - 0.2); math.Abs(rs.Batch-n) > 1e-6 || rs.Period != rs.Prep || rs.Period <= rs.Device {
		t.Errorf("preparation-bound: %+v, want batch %v and the cycle = preparation", rs, n)
	}
	// Beyond 1/b no batch keeps up.
	if u := m.Bound(1.001/m.DeviceB, 0.99); u.Stable || u.Latency != 0 {
		t.Errorf("beyond 1/b: %+v", u)
	}
	// A trickle: batches of one query, the cycle its arrival gap.
	if lo := m.Bound(10, 0.99); lo.Batch != 1 || lo.Period != 100*time.Millisecond {
		t.Errorf("10 q/s: %+v", lo)
	}
	// The costs that meet 20 ms: on the target, below the measured ones.
	a, okA, b, okB := m.Need(rate, 0.99, 20*time.Millisecond)
	if !okA || !okB || a >= m.DeviceA || b >= m.DeviceB {
		t.Fatalf("Need: a %v %v, b %v %v", a, okA, b, okB)
	}
	for _, x := range []PipeModel{{DeviceA: a, DeviceB: m.DeviceB}, {DeviceA: m.DeviceA, DeviceB: b}} {
		if l := x.Bound(rate, 0.99).Latency; l > 20*time.Millisecond || l < 20*time.Millisecond-10*time.Microsecond {
			t.Errorf("Need's %+v: p99 %v, want 20 ms", x, l)
		}
	}
	// closed form for a: 1.99·a/(1 − λb) = 20 ms.
	if want := 20e-3 * (1 - rate*m.DeviceB) / 1.99; math.Abs(a-want) > 1e-8 {
		t.Errorf("Need's a %v, want %v", a, want)
	}
	// A target met already: the measured costs; one no cost can meet.
	if a, okA, b, okB := m.Need(rate, 0.99, time.Second); !okA || !okB || a != m.DeviceA || b != m.DeviceB {
		t.Errorf("Need of 1 s: %v %v %v %v", a, okA, b, okB)
	}
	if _, okA, _, okB := mp.Need(rate, 0.99, time.Millisecond); okA || okB {
		t.Error("Need of 1 ms with 2 ms of preparation: ok")
	}
	defer func() {
		if recover() == nil {
			t.Error("Bound(0, 0.99): no panic")
		}
	}()
	m.Bound(0, 0.99)
}

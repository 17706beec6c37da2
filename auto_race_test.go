package qp

import (
	"context"
	"math"
	"time"

	"github.com/qpengine/qp/engine"
)

// simRace is router.race for the fakes of auto_test.go on clk: an event
// simulation of raceLive's searchers (the GPU's so.InFlight pieces in
// flight, the CPU's one) under the same racePolicy, in virtual time. A
// CPU piece is its batch's work (cpu.cost: its batch start each time); a
// GPU piece in flight beside k-1 others k·pipe times its batch's work
// (its stream's throughput, fakeProc.stream), one alone its batch's; a
// processor's pieces progress at 1/(1+contend) while the other processor
// has a piece in flight (the host's cores shared by the GPU's host
// preparation and the CPU's workers), at full speed otherwise. The clock
// advances by the race's length; the pieces are then emitted in order
// with the fakes' answers.
func simRace(clk *vclock, cpu, gpu *fakeProc, contend float64) raceFunc {
	procs := [2]*fakeProc{procCPU: cpu, procGPU: gpu}
	return func(ctx context.Context, pol *racePolicy, qs []engine.Query, lo, limit int, opt engine.Options, so StreamOptions,
		emit func(lo int, out []engine.Response) error) (int, error) {
		size := [2]int{procCPU: max(so.Chunk/raceCPUPiece, 1), procGPU: so.Chunk}
		type searcher struct {
			p        int
			n        int     // its piece's queries, 0: idle
			rem      float64 // its piece's work left (seconds alone)
			finished bool
		}
		var ss []*searcher
		for range pol.k[procGPU] {
			ss = append(ss, &searcher{p: procGPU})
		}
		ss = append(ss, &searcher{p: procCPU})
		type piece struct{ lo, n, p int }
		var pieces []piece
		cursor, now := lo, time.Duration(0)
		for {
			for _, s := range ss {
				if s.finished || s.n > 0 {
					continue
				}
				n := min(size[s.p], limit-cursor)
				if cursor >= limit || !pol.take(s.p, n, len(qs)-cursor, now) {
					s.finished = true
					continue
				}
				f := procs[s.p]
				t := f.cost(qs[cursor].Mode, n).Seconds()
				if k := pol.k[s.p]; s.p == procGPU && k >= 2 && f.pipe > 0 {
					t *= float64(k) * f.pipe
				}
				s.n, s.rem = n, t
				f.streamed += n
				pieces = append(pieces, piece{cursor, n, s.p})
				cursor += n
			}
			var flying [2]bool
			for _, s := range ss {
				flying[s.p] = flying[s.p] || s.n > 0
			}
			if !flying[procCPU] && !flying[procGPU] {
				break
			}
			speed := [2]float64{1, 1}
			if flying[procCPU] && flying[procGPU] {
				speed = [2]float64{1 / (1 + contend), 1 / (1 + contend)}
			}
			dt := math.Inf(1)
			for _, s := range ss {
				if s.n > 0 {
					dt = min(dt, s.rem/speed[s.p])
				}
			}
			now += time.Duration(dt * 1e9)
			for _, s := range ss {
				if s.n == 0 {
					continue
				}
				s.rem -= dt * speed[s.p]
				procs[s.p].busy += time.Duration(dt * 1e9)
				if s.rem <= 1e-12 {
					pol.answered(s.p, s.n, now)
					s.n = 0
				}
			}
		}
		clk.t = clk.t.Add(now)
		for _, pc := range pieces {
			out := make([]engine.Response, pc.n)
			procs[pc.p].answer(qs[pc.lo:pc.lo+pc.n], out)
			if err := emit(pc.lo, out); err != nil {
				return pc.lo, err
			}
		}
		return cursor, ctx.Err()
	}
}

// raceContend is the fakes' contention in a race (simRace).
const raceContend = 0.2

// Package assist runs fan-outs that other goroutines can join: a caller
// splits [0, n) into chunks and publishes the job on a Board; goroutines
// that are busy with work of their own (the scheduler's CPU slots) call
// Help between two of their items and run the job's remaining chunks
// themselves, and the Board's own parked workers are woken for it too.
//
// Why (issue 24, twelfth round): a GPU batch's host phases (preparation,
// result conversion) fan out over GOMAXPROCS goroutines. Beside 15-16 CPU
// slots that each run a query and then call runtime.Gosched, those
// goroutines hardly run in parallel: `go` (and a wake-up) puts a goroutine
// on the spawning P's local run queue, a P whose goroutine yields puts it
// on the global queue and takes it straight back from there (findRunnable
// looks at the local and the global queue before it steals from another
// P), so the fan-out's goroutines ran one after the other on the GPU
// slot's own P. A slot that helps instead gives the job its core within
// one of its own items' time, without a context switch; with no job open
// Help costs one atomic load.
//
// The design is the work-sharing of a fork-join pool whose idle workers
// are the callers' own busy goroutines (Blumofe and Leiserson's
// work-stealing, J. ACM 46(5) 1999, with the job's chunks as the one
// shared deque; OpenMP's dynamic schedule for the chunk counter).
package assist

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// maxJobs is how many jobs a Board holds open at once: a GPU slot's
// preparation beside another batch's conversion, nested fan-outs, a few
// backends. A Run that finds every slot taken fans out on goroutines of
// its own (the pre-Board path), which nobody can help.
const maxJobs = 16

// maxWorkers caps a Board's parked workers (and a job's participants are
// at most its workers argument anyway).
const maxWorkers = 256

// state packs a job's generation, whether it takes participants and how
// many are inside it: gen<<genShift | openBit | count.
const (
	openBit   = uint64(1) << 31
	countMask = openBit - 1
	genShift  = 32
)

// Board is where jobs are published. The zero Board is ready; a Board must
// not be copied after first use. Its parked workers (as many as the
// largest job's participants, at most maxWorkers) live as long as the
// process.
type Board struct {
	open atomic.Int32 // jobs taking participants (Help's one load)
	// spawnOnly: Run fans out on goroutines of its own and publishes
	// nothing (Default with QP_HOST_ASSIST=off).
	spawnOnly bool
	jobs      [maxJobs]job

	wake      chan token // to the parked workers
	wakeOnce  sync.Once
	workers   atomic.Int32 // parked workers started
	spawnLock sync.Mutex
}

// token asks a parked worker to join job j of generation gen (stale
// tokens fail join's generation check).
type token struct {
	j   *job
	gen uint64
}

// job is one published fan-out. Its plain fields are written by the
// publisher before it opens the job and read by participants only after
// they entered it (state's CAS orders them), and the publisher recycles
// the job only once every participant has left. n is atomic because Help
// reads it before entering, to pass by a job whose chunks are all taken.
type job struct {
	taken atomic.Bool   // the slot is a publisher's
	state atomic.Uint64 // gen | openBit | participants inside
	next  atomic.Int64  // the next chunk's start
	ids   atomic.Int32  // the next participant id (the publisher is 0)
	left  chan struct{} // the last participant out of a closed job signals

	n       atomic.Int64 // the items, [0, n)
	chunk   int64
	workers int32
	f       func(w, lo, hi int)

	panicked atomic.Bool // a participant's f panicked: panicVal is its value
	panicVal any
}

// Run calls f on the consecutive chunks of [0, n) of size chunk (the last
// shorter), from up to workers participants at once: the caller, the
// Board's woken workers and the goroutines that call Help meanwhile. f is
// told its participant id w in [0, min(workers, chunks)), each id used by
// one goroutine at a time, so f may use scratch of its own per w. With
// one participant (workers <= 1 or a single chunk) f is called once as
// f(0, 0, n). Run returns when every chunk has been run and no
// participant is inside f; a panic of f, in any participant, is raised
// again in Run's caller once the others have left. Run does not allocate
// once the Board's workers are started.
func (b *Board) Run(workers, n, chunk int, f func(w, lo, hi int)) {
	if chunk <= 0 {
		panic(fmt.Sprintf("BUG: assist: chunk %d", chunk))
	}
	w := min(workers, (n+chunk-1)/chunk)
	if w <= 1 {
		f(0, 0, n)
		return
	}
	var j *job
	if !b.spawnOnly {
		j = b.take()
	}
	if j == nil {
		spawn(w, n, chunk, f)
		return
	}
	b.start(w)
	j.n.Store(int64(n))
	j.chunk, j.workers, j.f = int64(chunk), int32(w), f
	j.next.Store(0)
	j.ids.Store(1)
	gen := j.state.Load() >> genShift
	j.state.Store(gen<<genShift | openBit) // publishes the fields above
	b.open.Add(1)
	// w tokens for w-1 ids: each wake-up puts the woken worker in this
	// P's runnext slot and pushes the one before into its run queue,
	// where an idle P steals it at once (runnext only after a few µs);
	// the last one, left in runnext, finds the job closed or full.
	for range w {
		select {
		case b.wake <- token{j, gen}:
		default: // every worker has a token waiting: enough are coming
		}
	}
	defer b.finish(j, gen)
	var ran bool
	j.work(0, &ran)
}

// finish closes j to newcomers, waits for the participants inside, raises
// a participant's panic and recycles j. Deferred by Run, so that a panic
// of f in the caller waits for the others too before it unwinds.
func (b *Board) finish(j *job, gen uint64) {
	if r := recover(); r != nil {
		j.next.Store(j.n.Load()) // no chunk more for anyone
		b.close(j)
		b.recycle(j, gen)
		panic(r)
	}
	b.close(j)
	// Every participant has left (close's CAS or the left signal orders
	// their writes before this read).
	panicked, p := j.panicked.Load(), j.panicVal
	b.recycle(j, gen)
	if panicked {
		panic(p)
	}
}

// close stops j from taking participants and waits until those inside it
// have left.
func (b *Board) close(j *job) {
	for {
		s := j.state.Load()
		if j.state.CompareAndSwap(s, s&^openBit) {
			b.open.Add(-1)
			if s&countMask != 0 {
				<-j.left
			}
			return
		}
	}
}

// recycle makes j a free slot of the next generation.
func (b *Board) recycle(j *job, gen uint64) {
	j.f, j.panicVal = nil, nil
	j.panicked.Store(false)
	j.state.Store((gen + 1) << genShift)
	j.taken.Store(false)
}

// take returns a free job slot, nil if all are taken.
func (b *Board) take() *job {
	for i := range b.jobs {
		if j := &b.jobs[i]; !j.taken.Load() && j.taken.CompareAndSwap(false, true) {
			if j.left == nil {
				j.left = make(chan struct{}, 1)
			}
			return j
		}
	}
	return nil
}

// start makes sure the Board has k parked workers (at most maxWorkers).
// They are goroutines blocked on a channel receive, woken by Run: no
// goroutine (and no closure) is made per job.
func (b *Board) start(k int) {
	k = min(k, maxWorkers)
	if int(b.workers.Load()) >= k {
		return
	}
	b.wakeOnce.Do(func() { b.wake = make(chan token, maxWorkers) })
	b.spawnLock.Lock()
	for int(b.workers.Load()) < k {
		b.workers.Add(1)
		go b.worker()
	}
	b.spawnLock.Unlock()
}

// worker is a parked worker: it joins the jobs it is woken for.
func (b *Board) worker() {
	for t := range b.wake {
		t.j.join(t.gen)
	}
}

// Help runs chunks of the jobs open on b, if any, until none has chunks
// left for it, and reports whether it ran any. Without an open job it
// costs one atomic load. Call it between two items of the caller's own
// work (it returns after the jobs' chunks are all taken, without waiting
// for their other participants).
func (b *Board) Help() bool {
	if b.open.Load() == 0 {
		return false
	}
	helped := false
	for i := range b.jobs {
		j := &b.jobs[i]
		// A job whose chunks are all taken is passed by without entering
		// (its caller closes it once its own last chunk is done); a stale
		// n read here only makes join's own checks decide.
		if s := j.state.Load(); s&openBit != 0 && j.next.Load() < j.n.Load() && j.join(s>>genShift) {
			helped = true
		}
	}
	return helped
}

// Open is the number of jobs open on b now (for reports and tests).
func (b *Board) Open() int { return int(b.open.Load()) }

// join enters j if it is still generation gen and open, takes an id and
// runs chunks; it reports whether it ran any (a chunk whose f panicked
// included).
func (j *job) join(gen uint64) (ran bool) {
	for {
		s := j.state.Load()
		if s>>genShift != gen || s&openBit == 0 {
			return false
		}
		if s&countMask == countMask {
			panic("BUG: assist: participant count overflow")
		}
		if j.state.CompareAndSwap(s, s+1) {
			break
		}
	}
	defer j.leave()
	id := j.ids.Add(1) - 1
	if id >= j.workers {
		return false // every id is taken: as many participants as f has scratch for
	}
	defer j.catch()
	j.work(int(id), &ran)
	return ran
}

// catch records the first participant panic for the publisher (which
// reads it once every participant has left) and stops the job's chunks.
func (j *job) catch() {
	if r := recover(); r != nil {
		if j.panicked.CompareAndSwap(false, true) {
			j.panicVal = r
		}
		j.next.Store(j.n.Load())
	}
}

// leave counts a participant out, signalling the publisher if it was the
// last of a closed job.
func (j *job) leave() {
	s := j.state.Add(^uint64(0))
	if s&openBit == 0 && s&countMask == 0 {
		j.left <- struct{}{}
	}
}

// work runs chunks as participant id until none is left, setting *ran
// before the first.
func (j *job) work(id int, ran *bool) {
	n := j.n.Load()
	for {
		lo := j.next.Add(j.chunk) - j.chunk
		if lo >= n {
			return
		}
		*ran = true
		j.f(id, int(lo), int(min(lo+j.chunk, n)))
	}
}

// spawn is the fan-out on goroutines of its own, for a Run that found no
// free job slot.
func spawn(w, n, chunk int, f func(w, lo, hi int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for id := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(int64(chunk))) - chunk
				if lo >= n {
					return
				}
				f(id, lo, min(lo+chunk, n))
			}
		}()
	}
	wg.Wait()
}

// Default is the process's Board: the GPU backend publishes its host
// phases on it and the scheduler's CPU slots help with them. With the
// environment variable QP_HOST_ASSIST=off it publishes nothing: its Run
// fans out on goroutines of its own, as before the Board (for A/B runs).
var Default = Board{spawnOnly: os.Getenv("QP_HOST_ASSIST") == "off"}

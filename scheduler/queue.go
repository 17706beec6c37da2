package scheduler

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/qpengine/qp/engine"
)

// job is a submitted query while the scheduler holds it.
type job struct {
	q         engine.Query
	f         Features
	x         [NumBasis]float64 // Basis(f), once (initJob): the predictions' and the GPU model update's
	cost      [2]time.Duration  // predicted cost on CPU and GPU (0: absent)
	pref      ProcID            // processor with the lower predicted cost
	seq       uint64            // submission order
	arrival   time.Time
	submitted time.Time
	deadline  time.Time // absolute
	urgentAt  time.Time // when it starts to count as near its deadline
	custom    bool      // its deadline is not the default
	tag       int       // Request.Tag
	done      func(*Result)
	res       *Result // Request.Result: where the result goes (nil: a new one)
	// more is the next job of the same SubmitBatch call (nil: none): the
	// dispatcher receives a call's jobs in one channel hand-off.
	more *job
	// chunk is the pooled array the job lives in (SubmitBatch; nil: a job
	// of its own, left to the collector).
	chunk *jobChunk

	queue      Queue // classification (where it waits)
	stolen     bool
	urgent     bool
	picked     bool // tentatively in a batch being built
	prev, next *job // in its queue
	inQueue    bool
}

// chunkJobs is the number of jobs of a jobChunk.
const chunkJobs = 64

// jobChunk is an array of jobs that SubmitBatch fills and that returns to
// chunkPool once every job in it has been answered (released). Fresh
// memory for every burst of jobs cost a page fault and a cache miss per
// line on the first write: with instant backends, a quarter of the
// replay's CPU time (issue 24).
//
// A chunk in the pool is zero in every job from used on (the jobs a
// SubmitBatch call did not fill were never written), so its release
// clears only jobs[:used]: a burst is usually far smaller than the chunk
// (the replay submits what is due at each wake-up, 10-50 arrivals at 1-2M
// q/s), and clearing all 64 jobs (25 KB) per burst was 1.73 s of the
// 16.3 s of CPU of a 2M q/s GPU-only GCIDE AND run on the H200 host
// (issue 24, hostcpu4).
type jobChunk struct {
	jobs [chunkJobs]job
	used int32        // jobs SubmitBatch filled (jobs[used:] are zero)
	live atomic.Int32 // jobs not yet released
}

var chunkPool = sync.Pool{New: func() any { return new(jobChunk) }}

// release is called once a job's done function has returned and nothing
// will read the job again (its batch keeps only the pointer, for its
// length): the last job of a chunk clears the jobs it used and returns
// the chunk to the pool.
func (j *job) release() {
	if c := j.chunk; c != nil && c.live.Add(-1) == 0 {
		clear(c.jobs[:c.used])
		c.used = 0
		chunkPool.Put(c)
	}
}

// jobList is an intrusive FIFO of jobs in submission order, with O(1)
// removal anywhere (stealing and urgent jobs leave from the middle) and the
// sum of its jobs' predicted costs per processor.
type jobList struct {
	head, tail *job
	n          int
	cost       [2]time.Duration
	// removed counts the jobs that have left the list: while it stays
	// the same, the list is the one it was with jobs pushed at its tail
	// (pickOwn's held batch).
	removed uint64
}

func (l *jobList) push(j *job) {
	if j.inQueue {
		panic("BUG: scheduler: job queued twice")
	}
	j.prev, j.next, j.inQueue = l.tail, nil, true
	if l.tail != nil {
		l.tail.next = j
	} else {
		l.head = j
	}
	l.tail = j
	l.n++
	l.cost[0] += j.cost[0]
	l.cost[1] += j.cost[1]
}

func (l *jobList) remove(j *job) {
	if !j.inQueue {
		panic("BUG: scheduler: removing a job that is not queued")
	}
	if j.prev != nil {
		j.prev.next = j.next
	} else {
		l.head = j.next
	}
	if j.next != nil {
		j.next.prev = j.prev
	} else {
		l.tail = j.prev
	}
	j.prev, j.next, j.inQueue = nil, nil, false
	l.n--
	l.removed++
	l.cost[0] -= j.cost[0]
	l.cost[1] -= j.cost[1]
}

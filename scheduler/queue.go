package scheduler

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/qpengine/qp/engine"
)

// job is a submitted query while the scheduler holds it.
type job struct {
	// done, res, more and q first: the pointers release drops share the
	// job's first 64 bytes, which the delivery has just read (one cache
	// line: a chunk's jobs are 384 bytes and its size class, 27,264
	// bytes, keeps it 64-byte aligned).
	done func(*Result)
	res  *Result // Request.Result: where the result goes (nil: a new one)
	// more is the next job of the same SubmitBatch call (nil: none): the
	// dispatcher receives a call's jobs in one channel hand-off.
	more      *job
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
type jobChunk struct {
	jobs [chunkJobs]job
	live atomic.Int32 // jobs not yet released
}

var chunkPool = sync.Pool{New: func() any { return new(jobChunk) }}

// release is called once a job's done function has returned and nothing
// will read the job again (its batch keeps only the pointer, for its
// length). A job of a chunk drops its pointers to memory the caller owns
// (the query's strings, the done function, the result record), so that a
// pooled chunk pins none of it, and the last job of a chunk returns the
// chunk to the pool; the rest of a released job is left as it was: the
// chunk's next SubmitBatch writes every field (initJob). (Clearing the
// whole 24 KB chunk here was 1.40 of the 23.4 s of CPU of a 2M q/s
// GPU-only GCIDE AND run on the H100 host, issue 24.) A job of its own
// is left to the collector as it is.
func (j *job) release() {
	c := j.chunk
	if c == nil {
		return
	}
	j.q.ID, j.q.Terms, j.done, j.res, j.more = "", nil, nil, nil, nil
	if c.live.Add(-1) == 0 {
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

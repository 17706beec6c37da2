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
	cost      [2]time.Duration // predicted cost on CPU and GPU (0: absent)
	pref      ProcID           // processor with the lower predicted cost
	seq       uint64           // submission order
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
// Consecutive SubmitBatch calls fill one chunk (chunkCarver) until its 64
// jobs are taken: a burst is usually far smaller than a chunk (the replay
// submits what is due at each wake-up, 10-50 arrivals at 1-2M q/s), and a
// chunk per call, cleared whole (25 KB) on its last release, was 2.4 s of
// the 16.3 s of CPU of a 2M q/s GPU-only GCIDE AND run on the H200 host,
// 1.7 s of it the clear and 0.5 s the pool's Put (issue 24, hostcpu4).
// A chunk in the pool is zero in every job from used on, so its last
// release clears only jobs[:used].
type jobChunk struct {
	jobs [chunkJobs]job
	used int32 // jobs handed out (jobs[used:] are zero); written under the carver's lock
	// live counts the jobs handed out and not yet released, plus one
	// while the chunk is its carver's current chunk.
	live atomic.Int32
}

var chunkPool = sync.Pool{New: func() any { return new(jobChunk) }}

// unref drops one reference to c: the last clears the jobs it handed out
// and returns c to the pool.
func (c *jobChunk) unref() { c.unrefN(1) }

// unrefN drops k references to c, as k unref calls would.
func (c *jobChunk) unrefN(k int32) {
	if c.live.Add(-k) == 0 {
		clear(c.jobs[:c.used])
		c.used = 0
		chunkPool.Put(c)
	}
}

// release is called once a job's done function has returned and nothing
// will read the job again (its batch keeps only the pointer, for its
// length).
func (j *job) release() {
	if c := j.chunk; c != nil {
		c.unref()
	}
}

// releaseJobs releases every job of js (job.release), with one update of
// a chunk's count for each run of consecutive jobs from that chunk: a GPU
// batch's jobs, in arrival order, come from a few chunks of 64, whose
// counts the submitter's core updates too (chunkCarver.take), so that a
// count per job was an atomic on a shared line per query (issue 24,
// hostq). Each job holds its chunk until its run's update, so that the
// chunks of the jobs after it are read before any of them can be
// recycled.
func releaseJobs(js []*job) {
	var c *jobChunk
	var k int32
	for _, j := range js {
		if j.chunk != c {
			if c != nil {
				c.unrefN(k)
			}
			c, k = j.chunk, 0
		}
		k++
	}
	if c != nil {
		c.unrefN(k)
	}
}

// chunkCarver hands out the jobs of one chunk to consecutive SubmitBatch
// calls, taking a new chunk from the pool when its current one is used up.
type chunkCarver struct {
	mu  sync.Mutex
	cur *jobChunk // holds a reference (jobChunk.live)
}

// take reserves up to n (> 0) jobs of the current chunk, c.jobs[lo:lo+m],
// each holding a reference to c until released; the jobs are zero.
func (cv *chunkCarver) take(n int) (c *jobChunk, lo, m int) {
	cv.mu.Lock()
	defer cv.mu.Unlock()
	c = cv.cur
	if c == nil || c.used == chunkJobs {
		if c != nil {
			c.unref()
		}
		c = chunkPool.Get().(*jobChunk)
		c.live.Store(1)
		cv.cur = c
	}
	lo = int(c.used)
	m = min(n, chunkJobs-lo)
	c.used += int32(m)
	c.live.Add(int32(m))
	return c, lo, m
}

// drop gives up the current chunk (the scheduler has shut down: no more
// takes); it returns to the pool once its jobs are released.
func (cv *chunkCarver) drop() {
	cv.mu.Lock()
	defer cv.mu.Unlock()
	if cv.cur != nil {
		cv.cur.unref()
		cv.cur = nil
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

package scheduler

import (
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

	queue      Queue // classification (where it waits)
	stolen     bool
	urgent     bool
	picked     bool // tentatively in a batch being built
	prev, next *job // in its queue
	inQueue    bool
}

// jobList is an intrusive FIFO of jobs in submission order, with O(1)
// removal anywhere (stealing and urgent jobs leave from the middle) and the
// sum of its jobs' predicted costs per processor.
type jobList struct {
	head, tail *job
	n          int
	cost       [2]time.Duration
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
	l.cost[0] -= j.cost[0]
	l.cost[1] -= j.cost[1]
}

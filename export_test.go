package qp

import "github.com/qpengine/qp/engine"

// SetStreamTimes sets, for Device Auto, the stream times per query that
// the router has measured for streams of qs's mode (or mixed modes) on the
// CPU and the GPU (seconds; 0: never streamed), so that a test can send a
// stream's segments to either processor (auto_stream.go). It panics on an
// engine without a router.
func SetStreamTimes(e *Engine, qs []engine.Query, cpu, gpu float64) {
	r := e.route
	r.mu.Lock()
	defer r.mu.Unlock()
	st := &r.modes[modeKey(qs)].stream
	st.per = [2]float64{procCPU: cpu, procGPU: gpu}
}

// ResetRouteStreams forgets, for Device Auto, what the router measured
// for streams of qs's mode (or mixed modes): the next stream starts with a
// race of both processors (auto_race.go).
func ResetRouteStreams(e *Engine, qs []engine.Query) {
	r := e.route
	r.mu.Lock()
	defer r.mu.Unlock()
	r.modes[modeKey(qs)].stream = streamState{}
}

// WithFirst returns so with a partial first chunk of first queries, as a
// Device Auto stream resuming after a race on a processor's own stream
// runs (StreamOptions.first).
func WithFirst(so StreamOptions, first int) StreamOptions {
	so.first = first
	return so
}

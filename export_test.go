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

// ResetRouteGPUFast forgets, for Device Auto, what the router measured for
// streams of qs's mode (or mixed modes) and records the GPU at 1 ns a
// query in batches of chunk: the next stream's calibration then measures
// the CPU on two slices and hands the rest of its first chunk, and the
// stream after it, to the GPU's stream (a partial first chunk).
func ResetRouteGPUFast(e *Engine, qs []engine.Query, chunk int) {
	r := e.route
	r.mu.Lock()
	defer r.mu.Unlock()
	m := &r.modes[modeKey(qs)]
	*m = modeCosts{}
	b := bucketOf(chunk)
	m.cost[procGPU][b], m.size[procGPU][b] = 1e-9, float64(chunk)
}

//go:build race

package serve

// raceEnabled: the race detector instruments memory accesses and makes
// sync.Pool drop items at random, so allocation counts are meaningless.
const raceEnabled = true

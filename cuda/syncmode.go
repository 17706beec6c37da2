package cuda

import (
	"fmt"
	"os"
	"strings"
)

// SyncMode is how the owner thread of a Context waits for the GPU in a
// blocking driver call (stream and event synchronization, synchronous
// copies): the CU_CTX_SCHED_* flags of the primary context (CUDA Driver
// API, cuDevicePrimaryCtxSetFlags).
type SyncMode uint32

const (
	// SyncAuto leaves the driver's default: spin while the process has
	// fewer active contexts than the host has logical processors (always,
	// for qp), else yield.
	SyncAuto SyncMode = 0
	// SyncSpin busy-waits: the lowest latency, one host core per wait.
	SyncSpin SyncMode = 1
	// SyncYield spins but yields the core to other threads between polls.
	SyncYield SyncMode = 2
	// SyncBlocking sleeps on a synchronization primitive until the GPU
	// is done: no host core while waiting, a wake-up's latency after.
	SyncBlocking SyncMode = 4
)

// SyncEnv names the environment variable Open reads the SyncMode from
// (auto, spin, yield or blocking; unset or empty: auto). It is a
// diagnostic of issue 24 (a spinning owner thread competes with CPU query
// workers for the host's cores): scripts/device/contention.sh.
const SyncEnv = "QP_CUDA_SYNC"

func (m SyncMode) String() string {
	switch m {
	case SyncAuto:
		return "auto"
	case SyncSpin:
		return "spin"
	case SyncYield:
		return "yield"
	case SyncBlocking:
		return "blocking"
	}
	return fmt.Sprintf("SyncMode(%d)", uint32(m))
}

// ParseSyncMode parses a SyncMode's String.
func ParseSyncMode(s string) (SyncMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return SyncAuto, nil
	case "spin":
		return SyncSpin, nil
	case "yield":
		return SyncYield, nil
	case "blocking", "block":
		return SyncBlocking, nil
	}
	return 0, fmt.Errorf("cuda: unknown sync mode %q (auto, spin, yield, blocking)", s)
}

// SyncModeFromEnv is the SyncMode SyncEnv names; an unknown value is an
// error that names the variable.
func SyncModeFromEnv() (SyncMode, error) {
	m, err := ParseSyncMode(os.Getenv(SyncEnv))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", SyncEnv, err)
	}
	return m, nil
}

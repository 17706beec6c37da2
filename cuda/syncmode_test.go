package cuda

import (
	"strings"
	"testing"
)

// TestParseSyncMode: every mode round-trips through its name, the flags
// are CUDA's CU_CTX_SCHED_* values, and a bad value is an error naming
// the variable.
func TestParseSyncMode(t *testing.T) {
	want := map[SyncMode]uint32{SyncAuto: 0, SyncSpin: 1, SyncYield: 2, SyncBlocking: 4}
	for m, flag := range want {
		got, err := ParseSyncMode(m.String())
		if err != nil || got != m || uint32(got) != flag {
			t.Fatalf("ParseSyncMode(%q) = %v (%d), %v; want %v (%d)", m.String(), got, uint32(got), err, m, flag)
		}
	}
	if m, err := ParseSyncMode(""); err != nil || m != SyncAuto {
		t.Fatalf("empty: %v, %v; want auto", m, err)
	}
	t.Setenv(SyncEnv, "sometimes")
	_, err := SyncModeFromEnv()
	if err == nil || !strings.Contains(err.Error(), SyncEnv) || !strings.Contains(err.Error(), "sometimes") {
		t.Fatalf("bad %s: error %v; want one naming the variable and the value", SyncEnv, err)
	}
}

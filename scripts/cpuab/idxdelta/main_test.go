package main

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestRoundTrip rebuilds targets made from a base by insertions,
// deletions, changed bytes and unrelated data, and checks that a wrong
// base or a damaged patch is refused.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	base := make([]byte, 50000)
	for i := range base {
		base[i] = byte(r.IntN(16)) // low entropy: repeated blocks
	}
	shifted := append(append(append([]byte{}, base[:10000]...), []byte("inserted bytes")...), base[10000:]...)
	changed := bytes.Clone(base)
	for i := 0; i < len(changed); i += 997 {
		changed[i] ^= 0x55
	}
	other := make([]byte, 3000)
	for i := range other {
		other[i] = byte(r.Uint32())
	}
	for name, tg := range map[string][]byte{
		"same": base, "shifted": shifted, "cut": append(bytes.Clone(base[:20000]), base[30000:]...),
		"changed": changed, "other": other, "empty": nil, "short": base[:10],
	} {
		p := diff(base, tg)
		got, err := apply(base, p)
		if err != nil || !bytes.Equal(got, tg) {
			t.Fatalf("%s: apply: %v (equal %v)", name, err, bytes.Equal(got, tg))
		}
		if name == "shifted" && len(p) > 200 {
			t.Errorf("shifted: patch of %d bytes for a 14-byte insertion", len(p))
		}
	}
	p := diff(base, shifted)
	if _, err := apply(changed, p); err == nil {
		t.Error("apply with another base: no error")
	}
	if _, err := apply(base, p[:len(p)-1]); err == nil {
		t.Error("apply of a truncated patch: no error")
	}
}

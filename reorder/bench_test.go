package reorder

import (
	"context"
	"os"
	"testing"

	"github.com/qpengine/qp/index"
)

// BenchmarkBisect bisects the graph of the index named by QP_REORDER_INDEX
// (skipped without it): go test ./reorder -run '^$' -bench Bisect.
func BenchmarkBisect(b *testing.B) {
	path := os.Getenv("QP_REORDER_INDEX")
	if path == "" {
		b.Skip("QP_REORDER_INDEX not set")
	}
	x, err := index.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	g, err := FromIndex(context.Background(), x, 2, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := Bisect(context.Background(), g, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

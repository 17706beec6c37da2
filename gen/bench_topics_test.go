package gen

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/score"
)

// BenchmarkTopicsDocs measures document generation alone (one goroutine):
// ns/doc and tokens/s at GOV2's default lengths.
func BenchmarkTopicsDocs(b *testing.B) {
	tp := newTopics(b, TopicsConfig{Params: TopicParams{Docs: 1 << 30}, Seed: 1, Log: queryLog(b), Workers: 1})
	var sc docScratch
	b.ResetTimer()
	tokens := 0
	for i := 0; i < b.N; i++ {
		g := tp.makeDoc(i, &sc, false)
		tokens += len(sc.tokens)
		_ = g
	}
	b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "docs/s")
}

// BenchmarkTopicsBuild measures generation through index.Build (all
// workers) for 20,000 documents per iteration.
func BenchmarkTopicsBuild(b *testing.B) {
	tp := newTopics(b, TopicsConfig{Params: TopicParams{Docs: 20000}, Seed: 1, Log: queryLog(b)})
	dir := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out := filepath.Join(dir, "b.idx")
		if _, err := tp.Build(context.Background(), BuildOptions{Index: index.BuildOptions{Out: out, DocCodec: bp128(b), FreqCodec: bp128(b), Params: score.Default}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(20000*b.N)/b.Elapsed().Seconds(), "docs/s")
}

package analysis

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/segment"
)

func mustNew(t testing.TB, o Options) *Analyzer {
	t.Helper()
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func check(t *testing.T, a *Analyzer, in string, want ...string) {
	t.Helper()
	got := a.Tokens(in)
	if want == nil {
		want = []string{}
	}
	if got == nil {
		got = []string{}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%v: Tokens(%q)\n got %q\nwant %q", a.Options(), in, got, want)
	}
	// The []byte, counting and callback entry points agree.
	if got2 := a.AppendTokens([]string{"x"}, []byte(in)); !reflect.DeepEqual(got2[1:], want) || got2[0] != "x" {
		t.Errorf("AppendTokens(%q) = %q", in, got2)
	}
	var each []string
	if n := a.Each([]byte(in), func(b []byte) { each = append(each, string(b)) }); n != len(want) || len(each) != n {
		t.Errorf("Each(%q) = %d", in, n)
	}
}

func TestOptions(t *testing.T) {
	for _, o := range []Options{{}, {Stem: "none", Stopwords: "none"}, {Stem: "english", Stopwords: "english"}, {Stem: "porter2"}} {
		if err := o.Validate(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
		if _, err := New(o); err != nil {
			t.Errorf("New(%+v): %v", o, err)
		}
	}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Stem: "porter"}, `analysis: unknown stemmer "porter" (allowed: "", "none", "english", "porter2")`},
		{Options{Stem: "English"}, `unknown stemmer "English"`},
		{Options{Stopwords: "smart"}, `analysis: unknown stopword list "smart" (allowed: "", "none", "english")`},
	} {
		err := tc.o.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.o, err, tc.want)
		}
		if a, err := New(tc.o); err == nil || a != nil {
			t.Errorf("New(%+v) accepted", tc.o)
		}
	}
	if got := (Options{}).Normalize(); got != (Options{Stem: "none", Stopwords: "none"}) {
		t.Errorf("Normalize = %+v", got)
	}
	if s := (Options{Stem: "english"}).String(); s != "stem=english stopwords=none" {
		t.Errorf("String = %q", s)
	}
	if a := mustNew(t, Options{Stopwords: "english"}); a.Options() != (Options{Stem: "none", Stopwords: "english"}) {
		t.Errorf("Options() = %+v", a.Options())
	}
	if n := len(EnglishStopwords()); n != 33 {
		t.Errorf("%d english stopwords, want 33", n)
	}
}

func TestStopSet(t *testing.T) {
	words := append(EnglishStopwords(), "longerword", "sevenxx", "eightxxx", "x")
	s := newStopSet(words)
	for _, w := range words {
		if !s.has([]byte(w)) {
			t.Errorf("%q missing", w)
		}
	}
	for _, w := range []string{"", "b", "the\x00", "\x00the", "thee", "th", "longerwor", "sevenx", "eightxxxx", "A", "THE", "ä"} {
		if s.has([]byte(w)) {
			t.Errorf("%q found", w)
		}
	}
	if len(s.long) != 2 {
		t.Errorf("long words: %v", s.long)
	}
}

func TestSegmentation(t *testing.T) {
	a := mustNew(t, Options{})
	check(t, a, "")
	check(t, a, " \t\n.,;:!?()[]{}\"'-—…")
	check(t, a, "Hello, World!", "hello", "world")
	check(t, a, "RFC 2616", "rfc", "2616")
	check(t, a, "3.14 1,000 $5.00 50% 1990s", "3.14", "1,000", "5.00", "50", "1990s")
	check(t, a, "U.S.A. e-mail foo_bar a.b x+y #tag @user", "u.s.a", "e", "mail", "foo_bar", "a.b", "x", "y", "tag", "user")
	check(t, a, "a:b 1:2 1,2 a,b 1;2 a.1 1.a x_1.2 a..b", "a:b", "1", "2", "1,2", "a", "b", "1;2", "a", "1", "1", "a", "x_1.2", "a", "b")
	// Runs of connectors alone are not words (as in Lucene).
	check(t, a, "_ __ ‿ _\u0301 _a a_", "_a", "a_")
	check(t, a, "😀 emoji ★ star", "emoji", "star")
	check(t, a, "line1\r\nline2\ttab", "line1", "line2", "tab")
}

// What UAX #29 (and so segment) does with apostrophes: an apostrophe (or
// U+2019) between letters stays inside the word; a leading or trailing one
// is dropped. Without a stemmer, possessives are kept.
func TestApostrophes(t *testing.T) {
	a := mustNew(t, Options{})
	check(t, a, "don't O'Neil", "don't", "o'neil")
	check(t, a, "can't rock'n'roll it's O'Neil's", "can't", "rock'n'roll", "it's", "o'neil's")
	check(t, a, "dogs' 'quoted' ''", "dogs", "quoted")
	check(t, a, "don’t O’Neil’s", "don’t", "o’neil’s")
	check(t, a, "1990's", "1990", "s")
	// With a stemmer the possessive 's goes first (Lucene's
	// EnglishPossessiveFilter, as in Anserini), before stopping.
	en := mustNew(t, Options{Stem: "english", Stopwords: "english"})
	check(t, en, "don't O'Neil's it's John’s dogs'", "don't", "o'neil", "john", "dog")
}

func TestUnicode(t *testing.T) {
	a := mustNew(t, Options{})
	check(t, a, "Ελληνικά ΣΟΦΙΑ", "ελληνικά", "σοφια")
	check(t, a, "中文字", "中", "文", "字")
	check(t, a, "東京タワーへ", "東", "京", "タワー", "へ")
	check(t, a, "한국어 İstanbul ǅ ÀÉÎ", "한국어", "istanbul", "ǆ", "àéî")
	check(t, a, "café naïve", "café", "naïve")
	check(t, a, "e\u0301te\u0301", "e\u0301te\u0301") // combining marks stay attached
	// Invalid UTF-8 separates words and loses nothing after it (segment by
	// itself stops at the first invalid byte).
	check(t, a, "x\xffy \xc3 ab\xe4\xb8cd \xc3", "x", "y", "ab", "cd")
}

func TestStopwordsAndStemming(t *testing.T) {
	text := "The quick brown foxes were jumping over the lazy dogs; generalizations of oscillators are not THE point."
	check(t, mustNew(t, Options{}), text,
		"the", "quick", "brown", "foxes", "were", "jumping", "over", "the", "lazy", "dogs",
		"generalizations", "of", "oscillators", "are", "not", "the", "point")
	check(t, mustNew(t, Options{Stopwords: "english"}), text,
		"quick", "brown", "foxes", "were", "jumping", "over", "lazy", "dogs",
		"generalizations", "oscillators", "point")
	check(t, mustNew(t, Options{Stem: "english"}), text,
		"the", "quick", "brown", "fox", "were", "jump", "over", "the", "lazi", "dog",
		"gener", "of", "oscil", "ar", "not", "the", "point")
	check(t, mustNew(t, Options{Stem: "english", Stopwords: "english"}), text,
		"quick", "brown", "fox", "were", "jump", "over", "lazi", "dog", "gener", "oscil", "point")
	check(t, mustNew(t, Options{Stem: "porter2", Stopwords: "english"}), text,
		"quick", "brown", "fox", "were", "jump", "over", "lazi", "dog", "general", "oscil", "point")
	// Stopwords are matched after lower-casing and before stemming: "THESE"
	// goes, "thes" (not a stopword) stays and is then stemmed to "the".
	check(t, mustNew(t, Options{Stem: "english", Stopwords: "english"}), "THESE Is iS thes", "the")
	// All 33 words are removed, and nothing else from this sample.
	check(t, mustNew(t, Options{Stopwords: "english"}), strings.Join(EnglishStopwords(), " ")+" an_d nor", "an_d", "nor")
}

// Reference pipeline: segment the whole text at once with the segment
// package, drop None segments and segments without a word character, and
// lower-case with strings.ToLower. Only valid for valid UTF-8 (segment
// stops at the first invalid byte).
func referenceTokens(text string) []string {
	vals, types, _, _ := segment.SegmentWordsDirect([]byte(text), nil, nil)
	var out []string
	for i, v := range vals {
		wordChar := func(r rune) bool { return !unicode.In(r, unicode.Pc, unicode.M, unicode.Cf) }
		if types[i] != segment.None && strings.IndexFunc(string(v), wordChar) >= 0 {
			out = append(out, strings.ToLower(string(v)))
		}
	}
	return out
}

// The ASCII fast path gives the segment package's words for every string
// of up to 4 characters (5 takes 10 s; it passes too) over an alphabet with
// a representative of each ASCII word-break class, and for random longer
// strings over it.
func TestASCIIMatchesSegment(t *testing.T) {
	a := mustNew(t, Options{})
	const alphabet = "aZ1_:,;.' -\"\n"
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 2000; i++ {
		b := make([]byte, 1+r.Intn(40))
		for j := range b {
			b[j] = alphabet[r.Intn(len(alphabet))]
		}
		if got, want := a.Tokens(string(b)), referenceTokens(string(b)); len(got) != len(want) || len(got) > 0 && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: got %q, want %q", b, got, want)
		}
	}
	n := 4
	buf := make([]byte, 0, n)
	var rec func()
	count := 0
	rec = func() {
		if len(buf) > 0 {
			count++
			text := string(buf)
			got, want := a.Tokens(text), referenceTokens(text)
			if len(got) != len(want) || len(got) > 0 && !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: got %q, want %q", text, got, want)
			}
		}
		if len(buf) == n {
			return
		}
		for i := 0; i < len(alphabet); i++ {
			buf = append(buf, alphabet[i])
			rec()
			buf = buf[:len(buf)-1]
		}
	}
	rec()
	t.Logf("%d strings", count)
}

var fragments = []string{
	"Word", "word", "UPPER", "don't", "O'Neil's", "3.14", "1,000", "RFC", "2616", "a.b", "e-mail",
	"Ελληνικά", "中文", "カタカナ", "ひらがな", "한국어", "İ", "ǅ", "e\u0301", "\u0301", "😀", "★",
	" ", " ", " ", "  ", "\n", "\r\n", "\t", ".", ",", "'", "’", "-", "_", "\u00a0", "\u200b", "\u3000",
}

func randomText(r *rand.Rand, n int) string {
	var sb strings.Builder
	for i := 0; i < n; i++ {
		sb.WriteString(fragments[r.Intn(len(fragments))])
	}
	return sb.String()
}

// Segmenting in chunks, lower-casing and the buffer reuse give exactly the
// reference tokens.
func TestMatchesReference(t *testing.T) {
	a := mustNew(t, Options{})
	r := rand.New(rand.NewSource(1))
	defer func(n int) { chunkSize = n }(chunkSize)
	for _, cs := range []int{32 << 10, 64, 7, 1} {
		chunkSize = cs
		for i := 0; i < 200; i++ {
			text := randomText(r, r.Intn(300))
			got, want := a.Tokens(text), referenceTokens(text)
			if len(got) != len(want) || len(got) > 0 && !reflect.DeepEqual(got, want) {
				t.Fatalf("chunk %d: %q\n got %q\nwant %q", cs, text, got, want)
			}
		}
	}
}

func TestLongText(t *testing.T) {
	a := mustNew(t, Options{Stem: "english"})
	// A long text with no line feed and a token longer than a chunk.
	text := strings.Repeat("Running dogs ", 10000) + strings.Repeat("x", 100000) + " 中文" + strings.Repeat("字", 20000)
	toks := a.Tokens(text)
	if n := 20000 + 1 + 2 + 20000; len(toks) != n {
		t.Fatalf("%d tokens, want %d", len(toks), n)
	}
	if toks[0] != "run" || toks[1] != "dog" || len(toks[20000]) != 100000 || toks[20001] != "中" {
		t.Errorf("unexpected tokens %q %q %d %q", toks[0], toks[1], len(toks[20000]), toks[20001])
	}
}

func TestConcurrent(t *testing.T) {
	a := mustNew(t, Options{Stem: "english", Stopwords: "english"})
	text := "The Quick brown foxes were jumping over the lazy dogs' Ελληνικά 中文"
	want := a.Tokens(text)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if got := a.Tokens(text); !reflect.DeepEqual(got, want) {
					t.Errorf("concurrent result %q", got)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestAppendTokensDoesNotModifyInput(t *testing.T) {
	a := mustNew(t, Options{Stem: "english", Stopwords: "english"})
	in := []byte("GENERALIZATIONS Running x\xffy ΣΟΦΙΑ")
	orig := string(in)
	a.AppendTokens(nil, in)
	if string(in) != orig {
		t.Errorf("input modified: %q", in)
	}
}

var lowerText = []byte(strings.Repeat("an experimental study of a wing in a propeller slipstream was made in order to determine the spanwise distribution of the lift increase due to slipstream at different angles of attack 1958\n", 20))

func TestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	for _, o := range []Options{{}, {Stem: "english", Stopwords: "english"}} {
		a := mustNew(t, o)
		n := a.Each(lowerText, func([]byte) {})
		dst := make([]string, 0, n)
		allocs := testing.AllocsPerRun(20, func() { dst = a.AppendTokens(dst[:0], lowerText) })
		// One string per token, nothing else.
		t.Logf("%v: AppendTokens: %.0f allocs for %d tokens", o, allocs, n)
		if allocs > float64(n) {
			t.Errorf("%v: AppendTokens: %.1f allocs for %d tokens", o, allocs, n)
		}
		if allocs := testing.AllocsPerRun(20, func() { a.Each(lowerText, func([]byte) {}) }); allocs != 0 {
			t.Errorf("%v: Each: %.1f allocs, want 0", o, allocs)
		}
		// Upper-case and non-ASCII input go through scratch buffers, also
		// without allocating.
		mixed := []byte("The GREEK word Ελληνικά and 中文 RUNNING " + string(lowerText[:200]))
		if allocs := testing.AllocsPerRun(20, func() { a.Each(mixed, func([]byte) {}) }); allocs != 0 {
			t.Errorf("%v: Each(mixed): %.1f allocs, want 0", o, allocs)
		}
	}
}

func FuzzTokens(f *testing.F) {
	for _, s := range fragments {
		f.Add(s + " " + s)
	}
	f.Add("x\xffy \xc3 ab\xe4\xb8cd")
	a := mustNew(f, Options{Stem: "english", Stopwords: "english"})
	raw := mustNew(f, Options{})
	f.Fuzz(func(t *testing.T, s string) {
		toks := a.Tokens(s)
		for _, tok := range toks {
			if tok == "" || !utf8.ValidString(tok) {
				t.Fatalf("bad token %q from %q", tok, s)
			}
		}
		if utf8.ValidString(s) {
			got, want := raw.Tokens(s), referenceTokens(s)
			if len(got) != len(want) || len(got) > 0 && !reflect.DeepEqual(got, want) {
				t.Fatalf("%q\n got %q\nwant %q", s, got, want)
			}
		}
	})
}

func BenchmarkAnalyze(b *testing.B) {
	text := []byte(strings.Repeat("An Experimental Study of a Wing in a Propeller Slipstream was made in order to determine the spanwise distribution of the lift increase due to slipstream at different angles of attack of the wing, 1958.\n", 200))
	for _, o := range []Options{{}, {Stem: "english", Stopwords: "english"}, {Stem: "porter2", Stopwords: "english"}} {
		a := mustNew(b, o)
		n := a.Each(text, func([]byte) {})
		b.Run(strings.ReplaceAll(o.String(), " ", ","), func(b *testing.B) {
			b.Run("AppendTokens", func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(text)))
				var dst []string
				for i := 0; i < b.N; i++ {
					dst = a.AppendTokens(dst[:0], text)
				}
				b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tokens/s")
			})
			b.Run("Each", func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(text)))
				for i := 0; i < b.N; i++ {
					a.Each(text, func([]byte) {})
				}
				b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tokens/s")
			})
		})
	}
}

// BenchmarkAnalyzeCranfield tokenizes the texts of the Cranfield
// collection (skipped when the test collections are absent).
func BenchmarkAnalyzeCranfield(b *testing.B) {
	data, err := os.ReadFile("../../../shared/data/collections/cranfield/docs.jsonl")
	if err != nil {
		b.Skip(err)
	}
	var texts [][]byte
	size := 0
	for _, line := range bytes.Split(data, []byte("\n")) {
		var d struct{ Text string }
		if json.Unmarshal(line, &d) == nil {
			texts = append(texts, []byte(d.Text))
			size += len(d.Text)
		}
	}
	for _, o := range []Options{{}, {Stem: "english", Stopwords: "english"}} {
		a := mustNew(b, o)
		b.Run(strings.ReplaceAll(o.String(), " ", ","), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			n := 0
			for i := 0; i < b.N; i++ {
				for _, t := range texts {
					n += a.Each(t, func([]byte) {})
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

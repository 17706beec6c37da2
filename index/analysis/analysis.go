// Package analysis turns text into index terms. The same Analyzer must be
// used for documents and for queries, so that both produce the same terms.
//
// The pipeline, per token:
//
//  1. Word segmentation by Unicode UAX #29 (github.com/blevesearch/segment,
//     Unicode 8.0 tables; pure-ASCII stretches of text take an equivalent
//     fast path). Every segment that is not of type None is kept: Letter,
//     Number, Kana and Ideo segments (Ideo covers each Han ideograph and
//     each Hiragana character; a Katakana run is one segment), except runs
//     of connector punctuation alone such as "_" or "__" (which Lucene's
//     StandardTokenizer does not emit either). Whitespace, punctuation,
//     symbols and emoji (type None) are dropped. Apostrophes, periods and
//     colons between letters, and commas, semicolons, periods and
//     apostrophes between digits, stay inside the word ("don't", "O'Neil",
//     "U.S.A", "a:b", "3.14", "1,000"); hyphens split ("e-mail" → "e",
//     "mail"). Invalid UTF-8 bytes act as separators.
//  2. Unicode lower-casing with the semantics of strings.ToLower.
//  3. When a stemmer is configured, the English possessive suffix is
//     removed: a trailing 's, ’s or ＇s ("o'neil's" → "o'neil"). This is
//     Lucene's EnglishPossessiveFilter, which Anserini's default English
//     analyzer runs before stopping and stemming.
//  4. Stopword removal.
//  5. Stemming.
//
// A document's length is the number of tokens the pipeline keeps (removed
// stopwords do not count).
package analysis

import (
	"encoding/binary"
	"fmt"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/blevesearch/segment"
	"github.com/kljensen/snowball/english"
)

// Values of Options.Stem and Options.Stopwords.
const (
	// None disables stemming or stopword removal; "" means the same.
	None = "none"
	// English is, for Stem, the original Porter (1980) stemmer as run by
	// Lucene's PorterStemFilter and therefore by Anserini; for Stopwords,
	// Lucene's EnglishAnalyzer list of 33 words (Anserini's default).
	English = "english"
	// Porter2 (Stem only) is the Snowball English ("Porter2") stemmer of
	// github.com/kljensen/snowball/english. Its stems differ from Porter's
	// (e.g. "generalizations" → "general", not "gener").
	Porter2 = "porter2"
)

var (
	stemValues = []string{"", None, English, Porter2}
	stopValues = []string{"", None, English}
)

// Options configures an Analyzer. The zero value applies no stemming and
// no stopword removal (segmentation and lower-casing only).
type Options struct {
	// Stem is "" or "none", "english" (Porter 1980), or "porter2".
	Stem string
	// Stopwords is "" or "none", or "english".
	Stopwords string
}

// Validate reports an error naming the allowed values when a field holds
// an unknown value. Values are case-sensitive.
func (o Options) Validate() error {
	if !contains(stemValues, o.Stem) {
		return fmt.Errorf("analysis: unknown stemmer %q (allowed: %q, %q, %q, %q)", o.Stem, "", None, English, Porter2)
	}
	if !contains(stopValues, o.Stopwords) {
		return fmt.Errorf("analysis: unknown stopword list %q (allowed: %q, %q, %q)", o.Stopwords, "", None, English)
	}
	return nil
}

// Normalize returns o with "" replaced by "none", so that two Options
// that configure the same pipeline compare equal.
func (o Options) Normalize() Options {
	if o.Stem == "" {
		o.Stem = None
	}
	if o.Stopwords == "" {
		o.Stopwords = None
	}
	return o
}

// String formats o as "stem=X stopwords=Y" (normalized).
func (o Options) String() string {
	o = o.Normalize()
	return "stem=" + o.Stem + " stopwords=" + o.Stopwords
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// englishStopwords is Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET.
var englishStopwords = []string{
	"a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if",
	"in", "into", "is", "it", "no", "not", "of", "on", "or", "such", "that",
	"the", "their", "then", "there", "these", "they", "this", "to", "was",
	"will", "with",
}

// EnglishStopwords returns a copy of the "english" stopword list.
func EnglishStopwords() []string {
	return append([]string(nil), englishStopwords...)
}

// stopSet is a set of words. Words of at most 7 bytes (all of the english
// list) are packed with their length into a uint64 and found in a
// collision-free hash table with one probe, several times faster than a
// map[string] lookup; longer words go to a map.
type stopSet struct {
	table [256]uint64 // packed word, 0 for an empty slot
	mul   uint64
	long  map[string]struct{}
}

// pack packs a word of 1 to 7 bytes into a non-zero key.
func pack(w []byte) uint64 {
	k := uint64(len(w)) << 56
	for i, c := range w {
		k |= uint64(c) << (8 * i)
	}
	return k
}

func (s *stopSet) slot(k uint64) int { return int((k * s.mul) >> 56) }

func newStopSet(words []string) *stopSet {
	s := &stopSet{long: map[string]struct{}{}}
	var short []uint64
	for _, w := range words {
		if len(w) == 0 || len(w) > 7 {
			s.long[w] = struct{}{}
		} else {
			short = append(short, pack([]byte(w)))
		}
	}
	// Find a multiplier without collisions (deterministic; the english
	// list needs a handful of tries). If none is found the short words
	// go to the map too.
	x := uint64(0x9E3779B97F4A7C15)
	for try := 0; try < 10000; try++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		s.mul = x | 1
		s.table = [256]uint64{}
		ok := true
		for _, k := range short {
			i := s.slot(k)
			if s.table[i] != 0 && s.table[i] != k {
				ok = false
				break
			}
			s.table[i] = k
		}
		if ok {
			return s
		}
	}
	s.table, s.mul = [256]uint64{}, 1
	for _, w := range words {
		s.long[w] = struct{}{}
	}
	return s
}

// has reports whether w is in the set.
func (s *stopSet) has(w []byte) bool {
	if len(w) > 0 && len(w) <= 7 {
		if k := pack(w); s.table[s.slot(k)] == k {
			return true
		}
	}
	if len(s.long) == 0 {
		return false
	}
	_, ok := s.long[string(w)]
	return ok
}

type stemmerKind uint8

const (
	stemNone stemmerKind = iota
	stemPorter
	stemPorter2
)

// Analyzer tokenizes text. It is immutable and safe for concurrent use.
type Analyzer struct {
	opts       Options
	stop       *stopSet // nil: no stopword removal
	stem       stemmerKind
	possessive bool
	pool       sync.Pool // *scratch
}

// scratch holds the per-call buffers, recycled through Analyzer.pool so
// that tokenizing allocates nothing but the token strings it returns.
type scratch struct {
	vals  [][]byte
	types []int
	clean []byte // chunk with invalid UTF-8 replaced
	lower []byte
	p     porter
}

// New returns an Analyzer for o, or the error of o.Validate.
func New(o Options) (*Analyzer, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	a := &Analyzer{opts: o.Normalize()}
	a.pool.New = func() any { return new(scratch) }
	if o.Stopwords == English {
		a.stop = newStopSet(englishStopwords)
	}
	switch o.Stem {
	case English:
		a.stem, a.possessive = stemPorter, true
	case Porter2:
		a.stem, a.possessive = stemPorter2, true
	}
	return a, nil
}

// Options returns the (normalized) options a was built with.
func (a *Analyzer) Options() Options { return a.opts }

// AppendTokens appends the terms of text to dst and returns the extended
// slice; the number appended is the document length. text is only read.
// Beyond growing dst, the only allocations are the term strings, one per
// term.
func (a *Analyzer) AppendTokens(dst []string, text []byte) []string {
	s := a.pool.Get().(*scratch)
	a.each(s, text, func(t []byte) { dst = append(dst, string(t)) })
	a.pool.Put(s)
	return dst
}

// AppendTokensString is AppendTokens for a string.
func (a *Analyzer) AppendTokensString(dst []string, text string) []string {
	return a.AppendTokens(dst, unsafe.Slice(unsafe.StringData(text), len(text)))
}

// Tokens returns the terms of text.
func (a *Analyzer) Tokens(text string) []string {
	return a.AppendTokensString(nil, text)
}

// Each calls fn with every term of text in order and returns their number
// (the document length). The slice passed to fn is only valid during the
// call and must not be modified; Each allocates nothing in the steady state
// (except with the "porter2" stemmer), which makes it the fastest way to
// count terms into a map (m[string(t)]++ does not allocate for existing
// keys).
func (a *Analyzer) Each(text []byte, fn func(term []byte)) int {
	s := a.pool.Get().(*scratch)
	n := a.each(s, text, fn)
	a.pool.Put(s)
	return n
}

// chunkSize bounds the size of the pieces of non-ASCII text given to the
// segmenter (when the text has cut points), which bounds the scratch memory
// for long texts. A variable so that tests can shrink it.
var chunkSize = 32 << 10

// each runs the pipeline over text. Text is cut into pieces at points that
// are word boundaries under every UAX #29 rule (see safeCut); pieces of
// ASCII text are segmented by asciiWords, which implements the UAX #29 rules
// restricted to ASCII (about ten times faster than the general segmenter and
// tested to give the same segments); other pieces go to the segment package.
func (a *Analyzer) each(s *scratch, text []byte, fn func([]byte)) int {
	n := 0
	for len(text) > 0 {
		j := indexNonASCII(text)
		if j < 0 {
			n += a.asciiWords(s, text, fn)
			break
		}
		if h := lastCut(text, j); h > 0 {
			n += a.asciiWords(s, text[:h], fn)
			text, j = text[h:], j-h
		}
		e := nextCut(text, j)
		n += a.segmentWords(s, text[:e], fn)
		text = text[e:]
	}
	return n
}

// indexNonASCII returns the index of the first byte >= 0x80 in b, or -1.
func indexNonASCII(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:])&0x8080808080808080 != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if b[i] >= utf8.RuneSelf {
			return i
		}
	}
	return -1
}

// safeCut reports whether there is a word boundary between text[c-1] and
// text[c] (0 < c < len(text)) whatever the rest of the text: after a line
// feed (UAX #29 WB3a), or after a space that is not followed by an Extend
// or Format character (WB4 would attach those to the space; no other rule
// joins a space to anything).
func safeCut(text []byte, c int) bool {
	switch text[c-1] {
	case '\n':
		return true
	case ' ':
		if text[c] < utf8.RuneSelf {
			return true
		}
		r, _ := utf8.DecodeRune(text[c:])
		// Conservative superset of Extend and Format.
		return !unicode.In(r, unicode.M, unicode.Cf, unicode.Lm, unicode.Sk)
	}
	return false
}

// lastCut returns the largest c in (0, j] where safeCut holds, or 0.
func lastCut(text []byte, j int) int {
	for c := j; c > 0; c-- {
		if safeCut(text, c) {
			return c
		}
	}
	return 0
}

// nextCut returns the end of the non-ASCII piece that contains text[j]:
// the first cut after j followed by an ASCII byte (so that the ASCII text
// after it takes the fast path), but not more than chunkSize bytes after j
// when a cut exists there; len(text) when there is no cut.
func nextCut(text []byte, j int) int {
	limit := j + chunkSize
	last := 0
	for c := j + 1; c < len(text); c++ {
		if c > limit && last > 0 {
			return last
		}
		if !safeCut(text, c) {
			continue
		}
		if text[c] < utf8.RuneSelf || c > limit {
			return c
		}
		last = c
	}
	if len(text) > limit && last > 0 {
		return last
	}
	return len(text)
}

// ASCII word-break classes of UAX #29 (Unicode 8.0).
const (
	wbOther  = iota
	wbLetter // ALetter: A-Z a-z
	wbDigit  // Numeric: 0-9
	wbUnder  // ExtendNumLet: _
	wbMidL   // MidLetter: ':'
	wbMidN   // MidNum: ',' ';'
	wbMidNL  // MidNumLet and Single_Quote: '.' '\''
)

var asciiClass = func() (t [128]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = wbLetter, wbLetter
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = wbDigit
	}
	t['_'] = wbUnder
	t[':'] = wbMidL
	t[','], t[';'] = wbMidN, wbMidN
	t['.'], t['\''] = wbMidNL, wbMidNL
	return t
}()

// asciiWords runs the pipeline over the words of the ASCII text b: maximal
// runs of letters, digits and underscores (WB5, WB8-10, WB13a/b), joined
// across one ':', '.' or '\” between letters (WB6/7) and one ',', ';', '.'
// or '\” between digits (WB11/12). Runs of underscores alone are dropped.
func (a *Analyzer) asciiWords(s *scratch, b []byte, fn func([]byte)) int {
	n := 0
	for i := 0; i < len(b); {
		if c := asciiClass[b[i]]; c == wbOther || c >= wbMidL {
			i++
			continue
		}
		start, letters := i, false
		for {
			for ; i < len(b); i++ {
				c := asciiClass[b[i]]
				if c == wbOther || c >= wbMidL {
					break
				}
				letters = letters || c != wbUnder
			}
			if i+1 >= len(b) {
				break
			}
			prev, mid, next := asciiClass[b[i-1]], asciiClass[b[i]], asciiClass[b[i+1]]
			if prev == wbLetter && next == wbLetter && (mid == wbMidL || mid == wbMidNL) ||
				prev == wbDigit && next == wbDigit && (mid == wbMidN || mid == wbMidNL) {
				i++
				continue
			}
			break
		}
		if !letters {
			continue
		}
		if t, ok := a.normalize(s, b[start:i]); ok {
			fn(t)
			n++
		}
	}
	return n
}

// segmentWords runs the pipeline over the words of text found by the
// segment package.
func (a *Analyzer) segmentWords(s *scratch, text []byte, fn func([]byte)) int {
	if !utf8.Valid(text) {
		s.clean = sanitize(s.clean[:0], text)
		text = s.clean
	}
	n := 0
	for len(text) > 0 {
		vals, types, used, _ := segment.SegmentWordsDirect(text, s.vals[:0], s.types[:0])
		for i, v := range vals {
			if types[i] == segment.None || onlyConnectors(v) {
				continue
			}
			if t, ok := a.normalize(s, v); ok {
				fn(t)
				n++
			}
		}
		clear(vals) // do not keep the caller's text reachable from the pool
		s.vals, s.types = vals[:0], types[:0]
		if used >= len(text) {
			break
		}
		// The segmenter stopped early (it does so on invalid UTF-8, which
		// sanitize has removed, so this is only a safety net): resume after
		// what it consumed, or skip one character.
		if used <= 0 {
			_, used = utf8.DecodeRune(text)
		}
		text = text[used:]
	}
	return n
}

// onlyConnectors reports whether the segment tok holds no letter, digit or
// other word character: only connector punctuation (ExtendNumLet, e.g.
// "_" or "‿") and Extend/Format characters. UAX #29 makes such runs words;
// Lucene's StandardTokenizer does not emit them, nor do we.
func onlyConnectors(tok []byte) bool {
	for _, r := range string(tok) {
		if !unicode.In(r, unicode.Pc, unicode.M, unicode.Cf) {
			return false
		}
	}
	return true
}

// sanitize appends b to dst with every byte that is not part of a valid
// UTF-8 sequence replaced by a space.
func sanitize(dst, b []byte) []byte {
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, ' ')
		} else {
			dst = append(dst, b[:size]...)
		}
		b = b[size:]
	}
	return dst
}

// normalize applies steps 2-5 of the pipeline to one segment. The result
// aliases tok or a scratch buffer; ok is false when the token is dropped.
func (a *Analyzer) normalize(s *scratch, tok []byte) (t []byte, ok bool) {
	t = tok
	ascii, lower := true, true
	for _, c := range t {
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
		if 'A' <= c && c <= 'Z' {
			lower = false
		}
	}
	switch {
	case !ascii:
		s.lower = appendLower(s.lower[:0], t)
		t = s.lower
	case !lower:
		s.lower = append(s.lower[:0], t...)
		for i, c := range s.lower {
			if 'A' <= c && c <= 'Z' {
				s.lower[i] = c + ('a' - 'A')
			}
		}
		t = s.lower
	}
	if a.possessive {
		t = trimPossessive(t)
		if len(t) == 0 {
			return nil, false
		}
	}
	if a.stop != nil {
		if a.stop.has(t) {
			return nil, false
		}
	}
	switch a.stem {
	case stemPorter:
		t = s.p.stem(t)
	case stemPorter2:
		st := english.Stem(string(t), true)
		s.p.b = append(s.p.b[:0], st...)
		t = s.p.b
	}
	return t, len(t) > 0
}

// appendLower appends the strings.ToLower form of the valid UTF-8 b.
func appendLower(dst, b []byte) []byte {
	for len(b) > 0 {
		c := b[0]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			b = b[1:]
			continue
		}
		r, size := utf8.DecodeRune(b)
		dst = utf8.AppendRune(dst, unicode.ToLower(r))
		b = b[size:]
	}
	return dst
}

// trimPossessive removes a trailing 's, ’s (U+2019) or ＇s (U+FF07), like
// Lucene's EnglishPossessiveFilter (applied after lower-casing here, which
// is equivalent).
func trimPossessive(t []byte) []byte {
	n := len(t)
	if n < 2 || t[n-1] != 's' {
		return t
	}
	switch {
	case t[n-2] == '\'':
		return t[:n-2]
	case n >= 4 && string(t[n-4:n-1]) == "\u2019", n >= 4 && string(t[n-4:n-1]) == "\uff07":
		return t[:n-4]
	}
	return t
}

package analysis

import (
	"strings"
	"testing"
)

// Word → stem pairs from the definition of the algorithm (Porter 1980 and
// the comments of the reference implementation).
var porterPairs = [][2]string{
	// step 1a
	{"caresses", "caress"}, {"ponies", "poni"}, {"ties", "ti"}, {"caress", "caress"}, {"cats", "cat"},
	// step 1b
	{"feed", "feed"}, {"agreed", "agre"}, {"plastered", "plaster"}, {"bled", "bled"},
	{"motoring", "motor"}, {"sing", "sing"}, {"conflated", "conflat"}, {"troubled", "troubl"},
	{"sized", "size"}, {"hopping", "hop"}, {"tanned", "tan"}, {"falling", "fall"},
	{"hissing", "hiss"}, {"fizzed", "fizz"}, {"failing", "fail"}, {"filing", "file"},
	{"disabled", "disabl"}, {"matting", "mat"}, {"mating", "mate"}, {"meeting", "meet"},
	{"milling", "mill"}, {"messing", "mess"}, {"meetings", "meet"},
	// step 1c
	{"happy", "happi"}, {"sky", "sky"},
	// step 2
	{"relational", "relat"}, {"conditional", "condit"}, {"rational", "ration"},
	{"valenci", "valenc"}, {"hesitanci", "hesit"}, {"digitizer", "digit"},
	{"conformabli", "conform"}, {"radicalli", "radic"}, {"differentli", "differ"},
	{"vileli", "vile"}, {"analogousli", "analog"}, {"vietnamization", "vietnam"},
	{"predication", "predic"}, {"operator", "oper"}, {"feudalism", "feudal"},
	{"decisiveness", "decis"}, {"hopefulness", "hope"}, {"callousness", "callous"},
	{"formaliti", "formal"}, {"sensitiviti", "sensit"}, {"sensibiliti", "sensibl"},
	// step 3
	{"triplicate", "triplic"}, {"formative", "form"}, {"formalize", "formal"},
	{"electriciti", "electr"}, {"electrical", "electr"}, {"hopeful", "hope"}, {"goodness", "good"},
	// step 4
	{"revival", "reviv"}, {"allowance", "allow"}, {"inference", "infer"}, {"airliner", "airlin"},
	{"gyroscopic", "gyroscop"}, {"adjustable", "adjust"}, {"defensible", "defens"},
	{"irritant", "irrit"}, {"replacement", "replac"}, {"adjustment", "adjust"},
	{"dependent", "depend"}, {"adoption", "adopt"}, {"homologou", "homolog"},
	{"communism", "commun"}, {"activate", "activ"}, {"angulariti", "angular"},
	{"homologous", "homolog"}, {"effective", "effect"}, {"bowdlerize", "bowdler"},
	// step 5
	{"probate", "probat"}, {"rate", "rate"}, {"cease", "ceas"}, {"controll", "control"}, {"roll", "roll"},
	// multi-step examples from the paper
	{"generalizations", "gener"}, {"oscillators", "oscil"},
	// the reference implementation's departures: short words, -bli, -logi
	{"as", "as"}, {"is", "is"}, {"ss", "ss"}, {"a", "a"}, {"", ""},
	{"possibli", "possibl"}, {"archaeologi", "archaeolog"},
	// y handling: y after a vowel is a consonant, after a consonant a vowel
	{"toy", "toi"}, {"enjoying", "enjoi"}, {"syzygy", "syzygi"}, {"yyyyy", "yyyyi"}, {"by", "by"},
	// inputs that hit bugs 1 and 2 of early releases
	{"aed", "a"}, {"eed", "eed"}, {"oed", "o"}, {"ion", "ion"}, {"ions", "ion"},
	// element: -ement fails the measure test and -ent is not tried
	{"element", "element"},
	// digits and other non-letters are consonants
	{"1990s", "1990"}, {"2616", "2616"}, {"don't", "don't"},
}

func TestPorterStem(t *testing.T) {
	for _, p := range porterPairs {
		if got := PorterStem(p[0]); got != p[1] {
			t.Errorf("PorterStem(%q) = %q, want %q", p[0], got, p[1])
		}
	}
}

// Non-ASCII words are stemmed on UTF-16 code units, as in Lucene.
func TestPorterStemUnicode(t *testing.T) {
	for _, p := range [][2]string{
		{"cafés", "café"},
		{"ñs", "ñs"},  // two UTF-16 units: too short to stem
		{"ños", "ño"}, // three units
		{"𝔸s", "𝔸"},   // a surrogate pair plus s: three units
		{"ελληνικά", "ελληνικά"},
		{"naïvely", "naïv"},
	} {
		if got := PorterStem(p[0]); got != p[1] {
			t.Errorf("PorterStem(%q) = %q, want %q", p[0], got, p[1])
		}
	}
}

func TestPorterStemLongWords(t *testing.T) {
	// Longer than maxStemLen: returned unchanged, quickly.
	long := strings.Repeat("y", 1<<16) + "ing"
	if got := PorterStem(long); got != long {
		t.Errorf("long word changed")
	}
	w := strings.Repeat("y", maxStemLen-3) + "ing"
	_ = PorterStem(w) // worst case for cons(): must be fast and not panic
	// Does not modify its input.
	var p porter
	in := []byte("generalizations")
	_ = p.stem(in)
	if string(in) != "generalizations" {
		t.Errorf("stem modified its input: %q", in)
	}
}

func BenchmarkPorterStem(b *testing.B) {
	var p porter
	words := make([][]byte, len(porterPairs))
	for i, w := range porterPairs {
		words[i] = []byte(w[0])
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p.stem(words[i%len(words)])
	}
}

package analysis

import (
	"unicode/utf16"
	"unicode/utf8"
)

// This file implements the original Porter stemming algorithm:
//
//	M.F. Porter, 1980, An algorithm for suffix stripping,
//	Program, 14(3) pp 130-137.
//
// It follows Martin Porter's own reference implementation (the ANSI C /
// Java "Release 3" versions), which is also what Lucene's PorterStemmer /
// PorterStemFilter (and therefore Anserini) run, so stems are identical to
// Anserini's for the same input token. That reference implementation has
// three documented departures from the 1980 paper, all reproduced here:
//
//   - words of one or two characters are returned unchanged;
//   - step 2 maps -bli to -ble (the paper has -abli to -able);
//   - step 2 maps -logi to -log (not in the paper).
//
// Like Lucene, the algorithm runs on UTF-16 code units: any code unit other
// than a, e, i, o, u (and y after a consonant) counts as a consonant, and the
// two-character limit counts code units. Pure-ASCII words are stemmed on
// their bytes directly (the same thing, without the conversion).

// maxStemLen bounds the length (in bytes) of the tokens given to the
// stemmer; longer tokens are returned unchanged. The algorithm is quadratic
// in the worst case (runs of 'y'), and Lucene's StandardTokenizer never
// produces tokens longer than 255 characters anyway.
const maxStemLen = 255

// PorterStem returns the Porter (1980) stem of word, which should already be
// lower-case (upper-case letters are treated as consonants, as in the
// reference implementation).
func PorterStem(word string) string {
	var p porter
	out := p.stem([]byte(word))
	if string(out) == word {
		return word
	}
	return string(out)
}

// porter holds the scratch buffers of one stemmer. It is not safe for
// concurrent use; the Analyzer keeps one per pooled scratch.
type porter struct {
	b   []byte
	u16 []uint16
}

// stem returns the stem of word. The result may alias word (when it is
// too short or too long to stem) or the stemmer's buffer (valid until the
// next call); word itself is never modified.
func (p *porter) stem(word []byte) []byte {
	if len(word) <= 2 || len(word) > maxStemLen {
		return word
	}
	ascii := true
	for _, c := range word {
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		p.b = append(p.b[:0], word...)
		return p.b[:stemUnits(p.b)]
	}
	// Non-ASCII: stem the UTF-16 code units, as Lucene does.
	p.u16 = p.u16[:0]
	for s := word; len(s) > 0; {
		r, size := utf8.DecodeRune(s)
		s = s[size:]
		p.u16 = utf16.AppendRune(p.u16, r)
	}
	n := stemUnits(p.u16)
	// Only ASCII suffixes are removed or rewritten, so the kept prefix is
	// well-formed UTF-16 followed by ASCII.
	p.b = p.b[:0]
	for i := 0; i < n; i++ {
		r := rune(p.u16[i])
		if utf16.IsSurrogate(r) && i+1 < n {
			r = utf16.DecodeRune(r, rune(p.u16[i+1]))
			i++
		}
		p.b = utf8.AppendRune(p.b, r)
	}
	return p.b
}

// unit is a code unit: a byte of an ASCII word or a UTF-16 code unit.
type unit interface{ ~byte | ~uint16 }

// stemmer is the state of the reference implementation: b[0..k] is the
// word being stemmed, j a general offset into it (k0 is always 0).
type stemmer[T unit] struct {
	b    []T
	j, k int
}

// stemUnits stems b in place and returns the length of the stem. Words of
// at most two units are left alone (a departure of the reference
// implementation).
func stemUnits[T unit](b []T) int {
	if len(b) <= 2 {
		return len(b)
	}
	z := stemmer[T]{b: b, k: len(b) - 1}
	z.step1ab()
	z.step1c()
	z.step2()
	z.step3()
	z.step4()
	z.step5()
	return z.k + 1
}

// cons reports whether b[i] is a consonant: not a, e, i, o, u, and not a y
// preceded by a consonant. (The reference implementation recurses on y;
// this walks back over a run of y's instead.)
func (z *stemmer[T]) cons(i int) bool {
	switch z.b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		flip := false
		for i > 0 && z.b[i] == 'y' {
			i--
			flip = !flip
		}
		var base bool
		switch z.b[i] {
		case 'a', 'e', 'i', 'o', 'u':
			base = false
		default: // a consonant, or a y at position 0
			base = true
		}
		return base != flip
	default:
		return true
	}
}

// m measures the number of consonant sequences in b[0..j]: with c a
// consonant sequence and v a vowel sequence, <c><v> gives 0, <c>vc<v> 1,
// <c>vcvc<v> 2, and so on.
func (z *stemmer[T]) m() int {
	n, i := 0, 0
	for {
		if i > z.j {
			return n
		}
		if !z.cons(i) {
			break
		}
		i++
	}
	i++
	for {
		for {
			if i > z.j {
				return n
			}
			if z.cons(i) {
				break
			}
			i++
		}
		i++
		n++
		for {
			if i > z.j {
				return n
			}
			if !z.cons(i) {
				break
			}
			i++
		}
		i++
	}
}

// vowelInStem reports whether b[0..j] contains a vowel.
func (z *stemmer[T]) vowelInStem() bool {
	for i := 0; i <= z.j; i++ {
		if !z.cons(i) {
			return true
		}
	}
	return false
}

// doublec reports whether b[j-1], b[j] is a double consonant.
func (z *stemmer[T]) doublec(j int) bool {
	if j < 1 || z.b[j] != z.b[j-1] {
		return false
	}
	return z.cons(j)
}

// cvc reports whether b[i-2], b[i-1], b[i] is consonant-vowel-consonant
// with the last consonant not w, x or y (cav(e), lov(e), hop(e), crim(e),
// but snow, box, tray).
func (z *stemmer[T]) cvc(i int) bool {
	if i < 2 || !z.cons(i) || z.cons(i-1) || !z.cons(i-2) {
		return false
	}
	switch z.b[i] {
	case 'w', 'x', 'y':
		return false
	}
	return true
}

// ends reports whether b[0..k] ends with s, and if so sets j to the offset
// just before the suffix.
func (z *stemmer[T]) ends(s string) bool {
	o := z.k - len(s) + 1
	if o < 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if z.b[o+i] != T(s[i]) {
			return false
		}
	}
	z.j = z.k - len(s)
	return true
}

// setto replaces b[j+1..k] with s and adjusts k. Replacements are never
// longer than the suffix they replace, so b never grows.
func (z *stemmer[T]) setto(s string) {
	o := z.j + 1
	for i := 0; i < len(s); i++ {
		z.b[o+i] = T(s[i])
	}
	z.k = z.j + len(s)
}

// r replaces the suffix found by ends with s when m() > 0.
func (z *stemmer[T]) r(s string) {
	if z.m() > 0 {
		z.setto(s)
	}
}

// step1ab removes plurals and -ed or -ing (steps 1a and 1b):
// caresses→caress, ponies→poni, ties→ti, caress→caress, cats→cat,
// feed→feed, agreed→agree, disabled→disable, matting→mat, mating→mate,
// meeting→meet, milling→mill, messing→mess, meetings→meet.
func (z *stemmer[T]) step1ab() {
	if z.b[z.k] == 's' {
		switch {
		case z.ends("sses"):
			z.k -= 2
		case z.ends("ies"):
			z.setto("i")
		case z.b[z.k-1] != 's':
			z.k--
		}
	}
	if z.ends("eed") {
		if z.m() > 0 {
			z.k--
		}
	} else if (z.ends("ed") || z.ends("ing")) && z.vowelInStem() {
		z.k = z.j
		switch {
		case z.ends("at"):
			z.setto("ate")
		case z.ends("bl"):
			z.setto("ble")
		case z.ends("iz"):
			z.setto("ize")
		case z.doublec(z.k):
			switch z.b[z.k] {
			case 'l', 's', 'z':
			default:
				z.k--
			}
		default:
			if z.m() == 1 && z.cvc(z.k) {
				z.setto("e")
			}
		}
	}
}

// step1c turns a terminal y into i when there is another vowel in the stem.
func (z *stemmer[T]) step1c() {
	if z.ends("y") && z.vowelInStem() {
		z.b[z.k] = 'i'
	}
}

// suffixRule replaces the suffix suf by rep when m() > 0 (r).
type suffixRule struct{ suf, rep string }

// step2Rules are step 2's rules by the last letter but one of the word,
// tried in the reference implementation's order: the first suffix that
// matches is the only one tried (applied or not by the measure).
var step2Rules = [256][]suffixRule{
	'a': {{"ational", "ate"}, {"tional", "tion"}},
	'c': {{"enci", "ence"}, {"anci", "ance"}},
	'e': {{"izer", "ize"}},
	'l': {{"bli", "ble"}, {"alli", "al"}, {"entli", "ent"}, {"eli", "e"}, {"ousli", "ous"}}, // departure: the paper has abli → able
	'o': {{"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"}},
	's': {{"alism", "al"}, {"iveness", "ive"}, {"fulness", "ful"}, {"ousness", "ous"}},
	't': {{"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"}},
	'g': {{"logi", "log"}}, // departure: not in the paper
}

// step3Rules are step 3's rules by the last letter of the word, tried as
// step2Rules are.
var step3Rules = [256][]suffixRule{
	'e': {{"icate", "ic"}, {"ative", ""}, {"alize", "al"}},
	'i': {{"iciti", "ic"}},
	'l': {{"ical", "ic"}, {"ful", ""}},
	's': {{"ness", ""}},
}

// rules applies the first of rules whose suffix the word ends with (by r),
// for letter c (none past 255: a UTF-16 code unit).
func (z *stemmer[T]) rules(table *[256][]suffixRule, c T) {
	if c > 255 {
		return
	}
	for _, rl := range table[c] {
		if z.ends(rl.suf) {
			z.r(rl.rep)
			return
		}
	}
}

// step2 maps double suffixes to single ones (-ization = -ize + -ation maps
// to -ize, etc.) when m() > 0 for the part before the suffix.
func (z *stemmer[T]) step2() {
	if z.k == 0 {
		return
	}
	z.rules(&step2Rules, z.b[z.k-1])
}

// step3 deals with -ic-, -full, -ness etc., like step2.
func (z *stemmer[T]) step3() {
	z.rules(&step3Rules, z.b[z.k])
}

// step4 takes off -ant, -ence etc. in context <c>vcvc<v> (m() > 1). The
// longest matching suffix is tried alone: element is not reduced via -ent
// once -ement fails the measure test.
func (z *stemmer[T]) step4() {
	if z.k == 0 {
		return
	}
	var ok bool
	switch z.b[z.k-1] {
	case 'a':
		ok = z.ends("al")
	case 'c':
		ok = z.ends("ance") || z.ends("ence")
	case 'e':
		ok = z.ends("er")
	case 'i':
		ok = z.ends("ic")
	case 'l':
		ok = z.ends("able") || z.ends("ible")
	case 'n':
		ok = z.ends("ant") || z.ends("ement") || z.ends("ment") || z.ends("ent")
	case 'o':
		ok = z.ends("ion") && z.j >= 0 && (z.b[z.j] == 's' || z.b[z.j] == 't') ||
			z.ends("ou") // takes care of -ous
	case 's':
		ok = z.ends("ism")
	case 't':
		ok = z.ends("ate") || z.ends("iti")
	case 'u':
		ok = z.ends("ous")
	case 'v':
		ok = z.ends("ive")
	case 'z':
		ok = z.ends("ize")
	}
	if ok && z.m() > 1 {
		z.k = z.j
	}
}

// step5 removes a final -e if m() > 1 (or m() = 1 and not *o), and
// changes -ll to -l if m() > 1 (steps 5a and 5b).
func (z *stemmer[T]) step5() {
	z.j = z.k
	if z.b[z.k] == 'e' {
		a := z.m()
		if a > 1 || a == 1 && !z.cvc(z.k-1) {
			z.k--
		}
	}
	if z.b[z.k] == 'l' && z.doublec(z.k) && z.m() > 1 {
		z.k--
	}
}

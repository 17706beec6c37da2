package gen

import (
	"math"
	"math/bits"
	"slices"
)

// rng is wyrand (Wang Yi's wyhash PRNG): 64-bit state, one 64×64→128
// multiply per output, passes BigCrush/PractRand. Not cryptographic.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(r.s, r.s^0xe7037ed1a0b428db)
	return hi ^ lo
}

// below returns a uniform integer in [0, n), n > 0 (Lemire, "Fast random
// integer generation in an interval", TOMACS 2019: multiply, reject the
// biased low part).
func (r *rng) below(n uint64) uint64 {
	hi, lo := bits.Mul64(r.next(), n)
	if lo < n {
		t := -n % n
		for lo < t {
			hi, lo = bits.Mul64(r.next(), n)
		}
	}
	return hi
}

// unit returns a uniform float64 in (0, 1].
func (r *rng) unit() float64 {
	return float64(r.next()>>11+1) * 0x1p-53
}

// splitmix64's finalizer (Steele, Lea & Flood, OOPSLA 2014).
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// termRNG is the PRNG of one term: seeded from (seed, rank) only.
func termRNG(seed int64, rank int) rng {
	return rng{s: mix(mix(uint64(seed)) + uint64(rank)*0x9e3779b97f4a7c15 + 1)}
}

const (
	tiny      = 64             // df <= tiny: Floyd's algorithm
	denseFrac = 1.0 / 16       // df/N >= denseFrac: one Bernoulli trial per document
	tomb      = math.MaxUint32 // a removed entry (never a docID: N <= 2^32-2)
)

// sample appends to dst a uniform random n-subset of [0, N), sorted
// ascending: every n-subset is equally likely, and the result is a pure
// function of r's state. 1 <= n <= N.
//
//   - n = N: all documents.
//   - n <= 64: Floyd's algorithm (Bentley & Floyd, CACM 30(9), 1987) with a
//     sorted insertion.
//   - otherwise a Bernoulli(n/N) sample, by one trial per document when
//     n/N >= 1/32 or by geometric skips between selected documents (Devroye,
//     Non-Uniform Random Variate Generation, 1986, §X.2.4) when sparser, of
//     some size k ≈ n; then the exact size is restored: if k > n, k-n
//     uniformly chosen members are removed; if k < n, n-k uniformly chosen
//     non-members are added (by rejection). Conditioned on k the Bernoulli
//     sample is a uniform k-subset, and removing (adding) a uniform subset
//     of the members (non-members) keeps it uniform, so the result is a
//     uniform n-subset. |k-n| is O(sqrt(n)), so the fix-up is cheap.
//
// Expected time O(n) (O(N) for dense lists, N <= 32n).
func sample(dst []uint32, n, N int, r *rng) []uint32 {
	start := len(dst)
	switch {
	case n == N:
		for i := range N {
			dst = append(dst, uint32(i))
		}
		return dst
	case n <= tiny:
		return floyd(dst, n, N, r)
	}
	p := float64(n) / float64(N)
	if p >= denseFrac {
		dst = bernoulliDense(dst, N, uint64(math.Round(p*65536)), r)
	} else {
		dst = bernoulliSparse(dst, N, p, r)
	}
	k := len(dst) - start
	switch {
	case k > n:
		dst = dst[:start+removeRandom(dst[start:], k-n, r)]
	case k < n:
		dst = addRandom(dst, start, n-k, N, r)
	}
	return dst
}

// floyd appends a uniform n-subset of [0, N), sorted.
func floyd(dst []uint32, n, N int, r *rng) []uint32 {
	start := len(dst)
	for j := N - n; j < N; j++ {
		t := uint32(r.below(uint64(j) + 1))
		s := dst[start:]
		i, found := slices.BinarySearch(s, t)
		if found {
			// t is taken: take j, larger than every member so far.
			dst = append(dst, uint32(j))
			continue
		}
		dst = slices.Insert(dst, start+i, t)
	}
	return dst
}

// bernoulliDense appends each document of [0, N) with probability
// thr/65536, one 16-bit trial per document (four per 64-bit draw),
// branch-free in blocks. sample restores the exact size afterwards, so the
// 2^-16 quantization of p only adds O(N/65536) to that fix-up.
func bernoulliDense(dst []uint32, N int, thr uint64, r *rng) []uint32 {
	var buf [256]uint32
	for base := 0; base < N; base += len(buf) {
		end := min(len(buf), N-base)
		c := 0
		var u uint64
		for i := range end {
			if i&3 == 0 {
				u = r.next()
			}
			buf[c] = uint32(base + i)
			c += int((u&0xffff - thr) >> 63) // 1 iff u&0xffff < thr
			u >>= 16
		}
		dst = append(dst, buf[:c]...)
	}
	return dst
}

// bernoulliSparse appends each document of [0, N) with probability p by
// skipping Geometric(p) documents between selections.
func bernoulliSparse(dst []uint32, N int, p float64, r *rng) []uint32 {
	inv := 1 / math.Log1p(-p) // < 0
	pos := -1
	for {
		g := math.Log(r.unit()) * inv // >= 0
		if g >= float64(N) {
			return dst
		}
		pos += int(g) + 1
		if pos >= N {
			return dst
		}
		dst = append(dst, uint32(pos))
	}
}

// removeRandom removes m uniformly chosen entries of the sorted s, keeping
// it sorted, and returns the new length.
func removeRandom(s []uint32, m int, r *rng) int {
	for range m {
		for {
			i := r.below(uint64(len(s)))
			if s[i] != tomb {
				s[i] = tomb
				break
			}
		}
	}
	w := 0
	for _, d := range s {
		if d != tomb {
			s[w] = d
			w++
		}
	}
	return w
}

// addRandom adds m uniformly chosen documents of [0, N) missing from the
// sorted dst[start:], keeping it sorted.
func addRandom(dst []uint32, start, m, N int, r *rng) []uint32 {
	have := dst[start:]
	extra := make([]uint32, 0, m)
	for len(extra) < m {
		t := uint32(r.below(uint64(N)))
		if _, in := slices.BinarySearch(have, t); in {
			continue
		}
		i, in := slices.BinarySearch(extra, t)
		if in {
			continue
		}
		extra = slices.Insert(extra, i, t)
	}
	// Merge from the back, in place.
	k := len(have)
	dst = append(dst, extra...) // grow by m
	out := dst[start:]
	i, j := k-1, m-1
	for w := k + m - 1; j >= 0; w-- {
		if i >= 0 && out[i] > extra[j] {
			out[w] = out[i]
			i--
		} else {
			out[w] = extra[j]
			j--
		}
	}
	return dst
}

// tfSampler draws 1 + X, X ~ Geometric on {0, 1, ...} with P(X >= k) = q^k
// (mean q/(1-q)), capped at maxTF. For long lists it compares one 64-bit
// draw u with the thresholds q^k·2^64 (X >= k iff u < q^k·2^64), starting
// from a guide table indexed by u's top 8 bits (Chen & Asau 1974), so most
// draws cost one lookup; past the table, and for short lists (where
// building it would cost more than it saves), by inversion,
// X = floor(ln U / ln q).
type tfSampler struct {
	lnq   float64
	nthr  int // 0: inversion only; -1: always 1
	thr   [32]uint64
	guide [256]uint8 // X at the top of each bucket of u
}

func newTFSampler(meanExcess float64, n int) tfSampler {
	var t tfSampler
	if meanExcess <= 0 {
		t.nthr = -1
		return t
	}
	q := meanExcess / (1 + meanExcess)
	t.lnq = math.Log(q)
	if n < 256 {
		return t
	}
	x := 1.0
	for t.nthr < len(t.thr) {
		x *= q
		v := x * 0x1p64
		if v < 1 {
			break
		}
		t.thr[t.nthr] = uint64(v)
		t.nthr++
	}
	// guide[b] = X(u) for the largest u of bucket b, the smallest X in it
	// (X falls as u grows).
	for b := range t.guide {
		u := uint64(b)<<56 | (1<<56 - 1)
		x := 0
		for x < t.nthr && u < t.thr[x] {
			x++
		}
		t.guide[b] = uint8(x)
	}
	return t
}

func (t *tfSampler) draw(r *rng) uint32 {
	switch t.nthr {
	case -1:
		return 1
	case 0:
		return t.invert(r, 0)
	}
	u := r.next()
	x := int(t.guide[u>>56])
	for x < t.nthr && u < t.thr[x] {
		x++
	}
	if x == len(t.thr) {
		return t.invert(r, x) // memorylessness: X - x ~ X
	}
	return uint32(1 + x)
}

func (t *tfSampler) invert(r *rng, base int) uint32 {
	g := math.Log(r.unit()) / t.lnq
	if g >= maxTF {
		return maxTF
	}
	return uint32(min(1+base+int(g), maxTF))
}

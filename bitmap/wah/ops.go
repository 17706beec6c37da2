package wah

import "fmt"

// Op is a bitwise reduction operator.
type Op uint8

const (
	OpOr  Op = iota // union: candidate docIDs of OR queries
	OpAnd           // intersection: the AND filter
)

func (o Op) String() string {
	switch o {
	case OpOr:
		return "or"
	case OpAnd:
		return "and"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Apply is o on two 31-bit groups.
func (o Op) Apply(a, b uint32) uint32 {
	if o == OpAnd {
		return a & b
	}
	return a | b
}

// Identity is the group x with o.Apply(x, g) == g for every group g.
func (o Op) Identity() uint32 {
	if o == OpAnd {
		return LitMask
	}
	return 0
}

// cursor walks the runs of a validated code: the current word's value v
// and the groups k it still covers.
type cursor struct {
	w    []uint32
	i    int
	v, k uint32
}

func (c *cursor) load() {
	if c.k != 0 || c.i >= len(c.w) {
		return
	}
	w := c.w[c.i]
	c.i++
	if w&FillFlag == 0 {
		c.v, c.k = w, 1
		return
	}
	c.v, c.k = 0, w&MaxRun
	if w&FillBit != 0 {
		c.v = LitMask
	}
}

// Combine returns o(a, b) computed on the compressed words (the runs of
// both codes are walked together; fills against fills produce fills
// without visiting their groups), in canonical form, appended to dst[:0].
// Both must be valid and of the same number of rows.
func Combine(dst []uint32, o Op, a, b Bitmap) (Bitmap, error) {
	if a.N != b.N {
		return Bitmap{}, fmt.Errorf("wah: combining bitmaps of %d and %d rows", a.N, b.N)
	}
	if err := a.Validate(); err != nil {
		return Bitmap{}, err
	}
	if err := b.Validate(); err != nil {
		return Bitmap{}, err
	}
	e := encoder{w: dst[:0]}
	ca, cb := cursor{w: a.Words}, cursor{w: b.Words}
	for {
		ca.load()
		cb.load()
		if ca.k == 0 || cb.k == 0 { // both end together (same group count)
			break
		}
		k := min(ca.k, cb.k)
		e.run(o.Apply(ca.v, cb.v), k)
		ca.k -= k
		cb.k -= k
	}
	return Bitmap{Words: e.w, N: a.N}, nil
}

// Reduce returns o over all of bms (at least one, all of the same number
// of rows) on the compressed words: a pairwise reduction tree in the
// column-oriented order of the paper's multi-core CPU approach 2 (level by
// level, bitmap i with bitmap i+s). The result is canonical.
func Reduce(o Op, bms ...Bitmap) (Bitmap, error) {
	if len(bms) == 0 {
		return Bitmap{}, fmt.Errorf("wah: reducing no bitmaps")
	}
	cur := append([]Bitmap(nil), bms...)
	if len(cur) == 1 { // canonicalize through one combine with itself
		return Combine(nil, o, cur[0], cur[0])
	}
	for len(cur) > 1 {
		s := (len(cur) + 1) / 2
		for i := 0; i+s < len(cur); i++ {
			r, err := Combine(nil, o, cur[i], cur[i+s])
			if err != nil {
				return Bitmap{}, err
			}
			cur[i] = r
		}
		cur = cur[:s]
	}
	return cur[0], nil
}

// Or is Reduce(OpOr, bms...).
func Or(bms ...Bitmap) (Bitmap, error) { return Reduce(OpOr, bms...) }

// And is Reduce(OpAnd, bms...).
func And(bms ...Bitmap) (Bitmap, error) { return Reduce(OpAnd, bms...) }

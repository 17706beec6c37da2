package index

// Leapfrog moves a and b forward to their next common docID and returns it
// (both cursors then stand on it), or stops with a on its first docID past
// lim and returns that docID (b then stands on some docID <= it), or
// returns Terminated once either list is exhausted. Neither cursor moves
// back: b moves to a's docID by NextGEQ semantics, a to b's, alternately
// (the zig-zag of a conjunctive DAAT intersection, Ding et al. WWW'09 §8;
// Veldhuizen's leapfrog join).
//
// It is the two-list inner loop of AND (engine.andSkip: a is the shortest
// list, b the second). The result equals calling a.NextGEQ(b.DocID()) and
// b.NextGEQ(a.DocID()) in turn, but the in-block moves run here without a
// call each (both decoded blocks' searches are inlined), which is where
// AND spends most of its time when the lead list is long; block changes
// still go through nextGEQBlock (skip table, decode, checks).
func Leapfrog(a, b *Cursor, lim uint32) uint32 {
	x := a.cur
	for x <= lim {
		if x > b.cur {
			if x > b.last {
				if b.nextGEQBlock(x) == Terminated {
					return Terminated
				}
			} else {
				b.pos = seekNear(b.docs, b.pos+1, x)
				b.cur = b.docs[b.pos]
			}
		}
		y := b.cur
		if y == x {
			return x
		}
		// y > x: a moves to y.
		if y > a.last {
			x = a.nextGEQBlock(y)
		} else {
			a.pos = seekNear(a.docs, a.pos+1, y)
			x = a.docs[a.pos]
			a.cur = x
		}
	}
	return x
}

// seekNear is seekGEQ with its window inlined into the caller: most moves
// of an intersection's zig-zag are a few postings (docs/CPU-ENGINE.md).
func seekNear(docs []uint32, p int, d uint32) int {
	if p+scanWindow <= len(docs) {
		w := docs[p : p+scanWindow : p+scanWindow]
		n := below(w[0], d) + below(w[1], d) + below(w[2], d) + below(w[3], d) +
			below(w[4], d) + below(w[5], d) + below(w[6], d) + below(w[7], d)
		if n < scanWindow {
			return p + n
		}
		p += scanWindow
	}
	return seekGEQ(docs, p, d)
}

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
				b.pos = seekGEQ(b.docs, b.pos+1, x)
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
			a.pos = seekGEQ(a.docs, a.pos+1, y)
			x = a.docs[a.pos]
			a.cur = x
		}
	}
	return x
}

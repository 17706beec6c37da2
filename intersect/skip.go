package intersect

import (
	"fmt"

	"github.com/qpengine/qp/index"
)

// Cursors appends the intersection of compressed lists to dst[:0] and
// returns it: the shortest list drives, every other cursor is moved with
// NextGEQ, which skips whole blocks by the skip table's last docIDs and
// decodes only blocks that may hold the target (Ding et al. WWW'09 §8: "we
// determine the blocks in the longer list that need to be decompressed ...
// the number of blocks that can be skipped ... is the same as ... under a
// DAAT approach"). The cursors must be freshly Reset; cs is reordered by DF
// and the cursors are left exhausted or past the last match.
//
// A decoding error of any list (Cursor.Err), or a cursor moving backwards
// (a block whose docIDs are not increasing), is returned wrapped, never
// turned into a silently wrong result.
func Cursors(dst []uint32, cs []*index.Cursor) ([]uint32, error) {
	dst = dst[:0]
	for i := 1; i < len(cs); i++ {
		x := cs[i]
		j := i
		for j > 0 && cs[j-1].List().DF > x.List().DF {
			cs[j] = cs[j-1]
			j--
		}
		cs[j] = x
	}
	if len(cs) == 0 {
		return dst, nil
	}
	lead := cs[0]
	d := lead.DocID()
	for d != index.Terminated {
		i := 1
		var e uint32
		for ; i < len(cs); i++ {
			if e = cs[i].NextGEQ(d); e != d {
				break
			}
		}
		if i == len(cs) {
			dst = append(dst, d)
			nd := lead.Next()
			if nd <= d {
				return dst, backwards(lead, d, nd)
			}
			d = nd
			continue
		}
		if e < d {
			return dst, backwards(cs[i], d, e)
		}
		nd := lead.NextGEQ(e)
		if nd < e {
			return dst, backwards(lead, e, nd)
		}
		d = nd
	}
	for _, c := range cs {
		if err := c.Err(); err != nil {
			return dst, fmt.Errorf("intersect: %w", err)
		}
	}
	return dst, nil
}

func backwards(c *index.Cursor, target, got uint32) error {
	if err := c.Err(); err != nil {
		return fmt.Errorf("intersect: %w", err)
	}
	return fmt.Errorf("intersect: %w: term %d: cursor moved from target %d to docID %d", index.ErrCorrupt, c.List().Term, target, got)
}

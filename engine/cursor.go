package engine

import "github.com/qpengine/qp/index"

// cursor is the DAAT algorithms' view of a posting list: an index.Cursor
// (concrete type, inlinable fast paths) plus the frequency-error rule of the
// engine. index.Cursor checks every block it loads against the previous one
// and the skip table (whose last docIDs Open checked to increase below N),
// so a cursor can neither move backwards nor reach N and no loop can spin or
// read a norm out of range.
type cursor struct {
	index.Cursor
}

func (w *cursor) list() *index.List { return w.List() }

// next advances to the next posting.
func (w *cursor) next() uint32 { return w.Next() }

// nextGEQ advances to the first posting >= t.
func (w *cursor) nextGEQ(t uint32) uint32 { return w.NextGEQ(t) }

// freq is the term frequency of the current posting. A frequency block that
// fails to decode terminates the cursor (tf 0; err reports it).
func (w *cursor) freq() uint32 { return w.Freq() }

// err is the decoding error that terminated the cursor, if any.
func (w *cursor) err() error { return w.Err() }

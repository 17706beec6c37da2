package index

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qpengine/qp/compress"
)

// idsIndex builds an index of len(ids) one-word documents with those ids.
func idsIndex(t *testing.T, ids []string) *Index {
	t.Helper()
	c, _ := compress.ByName("vbyte")
	if c == nil {
		t.Skip("vbyte codec not registered")
	}
	docs := make([]Document, len(ids))
	for i, id := range ids {
		docs[i] = Document{ID: id, Text: []byte(fmt.Sprintf("w%d common", i%7))}
	}
	path := filepath.Join(t.TempDir(), "x.qp")
	if _, err := Build(context.Background(), &sliceSource{docs: docs}, BuildOptions{
		Out: path, DocCodec: c, BlockSize: 16, NewAnalyzer: fieldsAnalyzer, MemBudget: 1 << 30, TempDir: t.TempDir(), Workers: 2,
	}); err != nil {
		t.Fatal(err)
	}
	x, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// TestIDSlots: the table gives ExternalID's ids for every document, in
// slots of the smallest power of two (at least 8) that holds the longest id
// and its length byte, and allocates nothing a lookup.
func TestIDSlots(t *testing.T) {
	for _, tc := range []struct {
		longest, width int
	}{{1, 8}, {7, 8}, {8, 16}, {12, 16}, {15, 16}, {16, 32}, {31, 32}} {
		t.Run(fmt.Sprint(tc.longest), func(t *testing.T) {
			var ids []string
			for i := range 300 {
				id := fmt.Sprintf("d%d", i)
				if i%5 == 1 {
					id = "ü" + id // UTF-8: extid.Valid decides
				}
				if len(id) > tc.longest {
					id = fmt.Sprintf("%d", i)[:tc.longest] // ids may repeat: not the table's concern
				}
				ids = append(ids, id)
			}
			ids[17] = strings.Repeat("L", tc.longest)
			x := idsIndex(t, ids)
			s, err := x.IDSlots()
			if err != nil || s == nil {
				t.Fatalf("IDSlots: %v, %v", s, err)
			}
			if s.Bytes() != tc.width*x.NumDocs() {
				t.Errorf("%d bytes for %d docs, want slots of %d", s.Bytes(), x.NumDocs(), tc.width)
			}
			if s.Width() != tc.width {
				t.Errorf("Width %d, want %d", s.Width(), tc.width)
			}
			for d := range uint32(x.NumDocs()) {
				want := x.ExternalID(d)
				if got := s.ID(d); got != want {
					t.Fatalf("doc %d: %q, ExternalID %q", d, got, want)
				}
				// Slot: the id's bytes, zeros, its length last.
				slot := s.Slot(d)
				if len(slot) != tc.width || cap(slot) != tc.width || int(slot[tc.width-1]) != len(want) ||
					string(slot[:len(want)]) != want || strings.Trim(string(slot[len(want):tc.width-1]), "\x00") != "" {
					t.Fatalf("doc %d: slot %q, id %q", d, slot, want)
				}
			}
			if n := testing.AllocsPerRun(100, func() { _ = s.ID(17) }); n != 0 {
				t.Errorf("ID allocates %.1f", n)
			}
		})
	}
}

// TestIDSlotsLong: an id of MaxIDSlot bytes (no room for its length byte),
// or a table over maxIDSlotsBytes, gives no table and no error.
func TestIDSlotsLong(t *testing.T) {
	x := idsIndex(t, []string{"a", strings.Repeat("b", MaxIDSlot), "c"})
	if s, err := x.IDSlots(); s != nil || err != nil {
		t.Fatalf("IDSlots: %v, %v; want nil, nil", s, err)
	}
	x = idsIndex(t, []string{"a", "b", "c"}) // 3 slots of 8 bytes
	defer func(m int) { maxIDSlotsBytes = m }(maxIDSlotsBytes)
	maxIDSlotsBytes = 24
	if s, err := x.IDSlots(); s == nil || err != nil || s.Bytes() != 24 {
		t.Fatalf("IDSlots within the bound: %v, %v", s, err)
	}
	maxIDSlotsBytes = 23
	if s, err := x.IDSlots(); s != nil || err != nil {
		t.Fatalf("IDSlots over the bound: %v, %v; want nil, nil", s, err)
	}
}

// TestIDSlotsCorrupt: an id damaged in place (white space, a control
// character, emptied) is an error wrapping ErrCorrupt that names the
// document: the check a run writer no longer makes per answer.
func TestIDSlotsCorrupt(t *testing.T) {
	for _, damage := range []string{"space", "control", "empty"} {
		t.Run(damage, func(t *testing.T) {
			x := idsIndex(t, []string{"doc-a", "doc-b", "doc-c", "doc-d"})
			d := -1
			for i := range x.NumDocs() {
				if x.ExternalID(uint32(i)) == "doc-c" {
					d = i
				}
			}
			id := x.ExternalID(uint32(d))
			a := len(x.idBytes) - len(strings.SplitAfterN(string(x.idBytes), id, 2)[1]) - len(id)
			switch damage {
			case "space":
				x.idBytes[a+3] = ' '
			case "control":
				x.idBytes[a+3] = 0x1b
			case "empty": // the document's end offset moved to its start
				copy(x.idOffs[8*(d+1):8*(d+2)], x.idOffs[8*d:8*d+8])
			}
			s, err := x.IDSlots()
			if s != nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("document %d", d)) {
				t.Fatalf("IDSlots: %v, %v; want an ErrCorrupt naming document %d", s, err, d)
			}
		})
	}
}

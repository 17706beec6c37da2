package index

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/qpengine/qp/compress"
)

// mappedIndex writes a small index and returns its path and file bytes.
func mappedIndex(t *testing.T) (string, []byte) {
	t.Helper()
	c, err := compress.ByName("bp128")
	if err != nil {
		t.Skip(err)
	}
	terms, docs, freqs, lens := randomLists(rand.New(rand.NewSource(11)), 200, 16)
	path := filepath.Join(t.TempDir(), "x.qp")
	writeIndex(t, path, c, 16, terms, docs, freqs, lens)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data
}

// TestOpenMappedMatchesHeap: the mapped index answers exactly like one
// loaded from a heap copy of the file (terms, records, lists' bytes,
// lengths, external ids), and Close is idempotent.
func TestOpenMappedMatchesHeap(t *testing.T) {
	path, data := mappedIndex(t)
	x, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	y, err := load(path, data)
	if err != nil {
		t.Fatal(err)
	}
	if x.NumTerms() != y.NumTerms() || x.NumDocs() != y.NumDocs() || x.NumTerms() == 0 {
		t.Fatalf("terms %d/%d docs %d/%d", x.NumTerms(), y.NumTerms(), x.NumDocs(), y.NumDocs())
	}
	for i := range x.NumTerms() {
		lx, err1 := x.List(i)
		ly, err2 := y.List(i)
		if err1 != nil || err2 != nil || x.Term(i) != y.Term(i) || x.Record(i) != y.Record(i) ||
			!bytes.Equal(lx.docs, ly.docs) || !bytes.Equal(lx.freqs, ly.freqs) || !bytes.Equal(lx.skips, ly.skips) {
			t.Fatalf("term %d differs (%v %v)", i, err1, err2)
		}
	}
	for d := range x.NumDocs() {
		if x.DocLens()[d] != y.DocLens()[d] || x.ExternalID(uint32(d)) != y.ExternalID(uint32(d)) {
			t.Fatalf("doc %d differs", d)
		}
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(r.(string), "BUG: index") || !strings.Contains(r.(string), "used after Close") {
				t.Errorf("List after Close: recovered %v", r)
			}
		}()
		x.List(0)
	}()
}

// TestOpenReportsSection: damage in the file on disk is reported by Open
// with the section it is in, wrapping ErrCorrupt, and leaves no mapping
// behind to use (nil Index).
func TestOpenReportsSection(t *testing.T) {
	path, data := mappedIndex(t)
	x, err := load(path, data)
	if err != nil {
		t.Fatal(err)
	}
	// A byte in the middle of POSTINGS, and one in TERMS' records.
	post := uintptrOffset(data, x.post)
	recs := uintptrOffset(data, x.recs)
	for name, off := range map[string]int{"POSTINGS": post + len(x.post)/2, "TERMS": recs + 3} {
		bad := append([]byte(nil), data...)
		bad[off] ^= 0x21
		p := filepath.Join(t.TempDir(), "bad.qp")
		if err := os.WriteFile(p, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		y, err := Open(p)
		if y != nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "section "+name+" checksum mismatch") {
			t.Errorf("%s damaged: %v, %v", name, y, err)
		}
	}
	for _, p := range []string{filepath.Join(t.TempDir(), "missing.qp"), t.TempDir()} {
		if y, err := Open(p); y != nil || err == nil {
			t.Errorf("Open(%s): %v %v", p, y, err)
		}
	}
	empty := filepath.Join(t.TempDir(), "empty.qp")
	os.WriteFile(empty, nil, 0o644)
	if _, err := Open(empty); !errors.Is(err, ErrCorrupt) {
		t.Errorf("empty file: %v", err)
	}
}

// uintptrOffset is the offset of sub inside data (sub is a slice of data).
func uintptrOffset(data, sub []byte) int {
	return int(uintptr(unsafe.Pointer(&sub[0])) - uintptr(unsafe.Pointer(&data[0])))
}

// TestUseAfterCloseFaults: a slice of the index kept past Close faults
// loudly (the Go runtime stops with "unexpected fault address") instead of
// reading memory that a later mapping reuses. Run in a child process.
func TestUseAfterCloseFaults(t *testing.T) {
	if os.Getenv("QP_INDEX_USE_AFTER_CLOSE") != "" {
		x, err := Open(os.Getenv("QP_INDEX_USE_AFTER_CLOSE"))
		if err != nil {
			panic(err)
		}
		l, _ := x.List(0)
		x.Close()
		println("read", l.skips[0]) // must fault
		os.Exit(0)
	}
	if runtime.GOOS != "linux" {
		t.Skip("the address range is guarded on Linux only (guardRange)")
	}
	path, _ := mappedIndex(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestUseAfterCloseFaults$")
	cmd.Env = append(os.Environ(), "QP_INDEX_USE_AFTER_CLOSE="+path)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "unexpected fault address") {
		t.Fatalf("use after Close: err %v, output:\n%s", err, out)
	}
}

// TestVerifyRangesMatchSequential: verifyLists on many ranges (all cores)
// accepts the good index with the same bitmaps and reports, for damaged
// dictionary records and postings, the same error as one range does.
func TestVerifyRangesMatchSequential(t *testing.T) {
	path, data := mappedIndex(t)
	defer func(g int) { verifyGrain = g }(verifyGrain)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	x, err := load(path, data)
	if err != nil {
		t.Fatal(err)
	}
	recs, post := uintptrOffset(data, x.recs), uintptrOffset(data, x.post)
	rng := rand.New(rand.NewSource(5))
	detected := 0
	for trial := 0; trial < 200; trial++ {
		bad := append([]byte(nil), data...)
		var off int
		if trial%2 == 0 {
			off = recs + rng.Intn(len(x.recs))
		} else {
			off = post + rng.Intn(len(x.post))
		}
		bad[off] ^= byte(1 + rng.Intn(255))
		var errs [2]string
		for i, grain := range []int{1 << 30, 3} {
			verifyGrain = grain
			y := &Index{path: path, Meta: x.Meta, termOffs: x.termOffs, termBytes: x.termBytes, version: x.version,
				recs: bad[recs : recs+len(x.recs)], post: bad[post : post+len(x.post)]}
			if err := y.verifyLists(); err != nil {
				errs[i] = err.Error()
			}
		}
		if errs[0] != errs[1] {
			t.Fatalf("byte %d: one range %q, many %q", off, errs[0], errs[1])
		}
		if errs[0] != "" {
			detected++
		}
	}
	if detected < 50 {
		t.Fatalf("only %d of 200 damaged copies rejected: the test damages nothing checked", detected)
	}
}

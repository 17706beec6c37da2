package serve

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestDecodeFast: the fast path takes the bodies clients send (json.Marshal
// of random requests, the load generator's), with the values encoding/json
// decodes; the seeds it must refuse go to encoding/json, which gives the
// same answers and errors as before the fast path.
func TestDecodeFast(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"parallel", "sorting", "é", "x y", "<a&b>", "", "k=10"}
	for range 2000 {
		req := SearchRequest{ID: words[r.IntN(len(words))], Q: words[r.IntN(len(words))] + " " + words[r.IntN(len(words))],
			Mode: []string{"", "and", "or"}[r.IntN(3)], K: r.IntN(2000) - 5, QTF: r.IntN(2) == 0, Stored: r.IntN(2) == 0,
			TimeoutMS: r.IntN(100000)}
		b, _ := json.Marshal(req)
		var got SearchRequest
		p := fastParser{b: b}
		if req.Q != "<a&b> <a&b>" && !containsEscape(b) {
			if !p.request(&got) || !p.end() || !reflect.DeepEqual(got, req) {
				t.Fatalf("%s: fast path %+v, want %+v", b, got, req)
			}
		}
		if d, e := decodeSearch(b); e != nil || !reflect.DeepEqual(d, req) {
			t.Fatalf("%s: decodeSearch %+v %v", b, d, e)
		}
		br := BatchRequest{Queries: []SearchRequest{req, req}}
		b, _ = json.Marshal(br)
		if d, e := decodeBatch(b); e != nil || !reflect.DeepEqual(d, br) {
			t.Fatalf("%s: decodeBatch %+v %v", b, d, e)
		}
	}
	for _, s := range fastSeeds {
		checkFastEqual(t, []byte(s))
		var want SearchRequest
		we := unmarshalStrict([]byte(s), &want)
		got, ge := decodeSearch([]byte(s))
		if (we == nil) != (ge == nil) || (we != nil && *we != *ge) || (we == nil && !reflect.DeepEqual(got, want)) {
			t.Errorf("%q: decodeSearch %+v %v, encoding/json %+v %v", s, got, ge, want, we)
		}
	}
	for _, s := range []string{`{"q":"a\"b"}`, `{"Q":"a"}`, `{"k":1.0}`, `{"q":null}`, "{\"q\":\"\xff\"}", `{"k":1}x`} {
		var v SearchRequest
		if p := (fastParser{b: []byte(s)}); p.request(&v) && p.end() {
			t.Errorf("%q: the fast path took it (%+v); encoding/json must decide", s, v)
		}
	}
}

func containsEscape(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}

package serve

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecodeSearch: decoding a request body never panics, refuses what is
// not one JSON object of known fields, and what it accepts survives a
// round trip. The batch decoder gets the same bytes.
func FuzzDecodeSearch(f *testing.F) {
	for _, s := range []string{`{"q":"parallel sorting","mode":"or","k":10}`, `{"q":"x","qtf":true,"stored":true,"timeout_ms":5,"id":"7"}`,
		`{"queries":[{"q":"a"},{"q":"b","k":3}]}`, `{"q":`, `[]`, `{"q":"a"} x`, `{"k":1e400}`, `{"q":"\ud800"}`, ``, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const max = 1 << 16
		req, e := DecodeSearch(bytes.NewReader(data), max)
		if e != nil {
			if e.Code == "" || e.Message == "" || e.Status() < 400 {
				t.Fatalf("error without code, message or status: %+v", e)
			}
		} else {
			b, err := json.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			again, e := DecodeSearch(bytes.NewReader(b), max)
			if e != nil || !reflect.DeepEqual(req, again) {
				t.Fatalf("round trip of %q: %+v, %+v, %v", data, req, again, e)
			}
		}
		if _, e := DecodeBatch(bytes.NewReader(data), max); e != nil && e.Code == "" {
			t.Fatalf("batch error without code: %+v", e)
		}
		if len(data) > 10 {
			if _, e := DecodeSearch(bytes.NewReader(data), int64(len(data)-1)); e == nil || e.Code != CodeBodyTooLarge {
				t.Fatalf("body of %d bytes over a limit of %d: %v", len(data), len(data)-1, e)
			}
		}
	})
}

// FuzzDecodeFastEqual: what the hand-written request parser accepts,
// encoding/json (unmarshalStrict, the fallback) accepts with an equal
// result, for single and batch bodies.
func FuzzDecodeFastEqual(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFastEqual(t, data)
	})
}

// fastSeeds: bodies the fast path takes and bodies it must leave to
// encoding/json (escapes, null, case-folded names, numbers it refuses).
var fastSeeds = []string{`{"q":"parallel sorting","mode":"or","k":10}`, ` {"q":"x","qtf":true,"stored":false,"timeout_ms":5,"id":"7"} `,
	`{"queries":[{"q":"a"},{"q":"b","k":3}]}`, `{"queries":[]}`, `{}`, `{"q":"a\"b"}`, `{"Q":"a"}`, `{"k":1.0}`, `{"k":-0}`,
	`{"k":01}`, `{"k":123456789012345678}`, `{"k":1234567890123456789}`, `{"q":null}`, `{"q":"é"}`, "{\"q\":\"\xff\"}",
	`{"queries":[{"q":"a"}],"queries":[{"k":2}]}`, `{"q":"a","q":"b"}`, `{"qtf":truex}`, `{"k":1}x`, `{"k":2,}`, `{,}`,
	`{"queries":[{"q":"a"},]}`, `{"x":1}`, `{"q":"a"}{}`, "{\"q\":\"a\tb\"}",
	// mode: the interned names (fastParser.mode) and near misses.
	`{"q":"a","mode":"and"}`, `{"mode":"andor","q":"a"}`, `{"mode":"AND"}`, `{"mode":"an"}`, `{"mode":"andorx"}`,
	`{"mode":"or\u0000"}`, `{"mode":"é"}`, `{"mode":""}`, `{"mode":"and`, `{"mode":and}`, `{"mode":"and"x}`}

func checkFastEqual(t testing.TB, data []byte) {
	var v SearchRequest
	if p := (fastParser{b: data}); p.request(&v) && p.end() {
		var w SearchRequest
		if e := unmarshalStrict(data, &w); e != nil || !reflect.DeepEqual(v, w) {
			t.Fatalf("%q: fast %+v, encoding/json %+v (%v)", data, v, w, e)
		}
	}
	var bv BatchRequest
	if p := (fastParser{b: data}); p.batch(&bv) && p.end() {
		var w BatchRequest
		if e := unmarshalStrict(data, &w); e != nil || !reflect.DeepEqual(bv, w) {
			t.Fatalf("%q: fast %+v, encoding/json %+v (%v)", data, bv, w, e)
		}
	}
}

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

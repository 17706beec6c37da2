package analysis

import (
	"fmt"
	"testing"

	"github.com/blevesearch/segment"
)

func TestExplore(t *testing.T) {
	for _, s := range []string{"x\xffy \xc3", "ab \xc3", "ab \xffcd ef", "ab\xe4\xb8 cd", "foo\n\u0301bar", "a \u0301b"} {
		val, types, n, err := segment.SegmentWordsDirect([]byte(s), nil, nil)
		fmt.Printf("%q len=%d n=%d err=%v\n", s, len(s), n, err)
		for i := range val {
			fmt.Printf("  %q %d\n", val[i], types[i])
		}
	}
}

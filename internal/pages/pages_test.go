package pages

import "testing"

// TestZeroed: the slice has n zero elements and its own storage.
func TestZeroed(t *testing.T) {
	for _, n := range []int{0, 1, 1000, 1 << 20} {
		s := Zeroed[float32](n)
		if len(s) != n || cap(s) < n {
			t.Fatalf("n %d: len %d cap %d", n, len(s), cap(s))
		}
		for i, v := range s {
			if v != 0 {
				t.Fatalf("n %d: element %d is %v", n, i, v)
			}
		}
		if n > 0 {
			s[n-1] = 1
			if u := Zeroed[float32](n); u[n-1] != 0 {
				t.Fatalf("n %d: storage shared", n)
			}
		}
	}
}

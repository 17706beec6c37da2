module github.com/qpengine/qp

go 1.26.8

require (
	github.com/RoaringBitmap/roaring/v2 v2.30.0
	github.com/blevesearch/segment v0.9.1
	github.com/dgraph-io/ristretto/v2 v2.4.2
	github.com/ebitengine/purego v0.11.3
	github.com/kljensen/snowball v0.10.0
)

require (
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/mschoch/smat v0.2.0 // indirect
	golang.org/x/sys v0.36.0 // indirect
)

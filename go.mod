module github.com/qpengine/qp

go 1.26.8

require (
	github.com/RoaringBitmap/roaring v1.9.4
	github.com/blevesearch/segment v0.9.1
	github.com/dgraph-io/ristretto v0.2.0
	github.com/ebitengine/purego v0.12.0-alpha
	github.com/kljensen/snowball v0.10.0
)

require (
	github.com/bits-and-blooms/bitset v1.12.0 // indirect
	github.com/cespare/xxhash/v2 v2.1.1 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/mschoch/smat v0.2.0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	golang.org/x/sys v0.11.0 // indirect
)

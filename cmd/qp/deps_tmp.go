package main

import (
	_ "github.com/RoaringBitmap/roaring"
	_ "github.com/blevesearch/segment"
	_ "github.com/dgraph-io/ristretto"
	_ "github.com/ebitengine/purego"
	_ "github.com/kljensen/snowball/english"
)

func main() {}

module qppair

go 1.26

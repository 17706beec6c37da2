// Command idxdelta writes and applies a binary delta of one file against
// another, so that two index files of the same documents (b3d41c3's own
// format-2 index and today's format-3 one, docs/CPU-ENGINE.md) travel to the
// GPU machine as one index and a small patch (scripts/device/cpuab.sh: a
// device call carries at most 64 MiB, the RFC pages index alone is ~30 MiB
// xz'd). The two files differ in their bitmap lists' encodings, which shift
// every later byte, and in the offsets that point past them: a delta of
// copies and literals keeps them small where xz of the second file would
// not.
//
//	idxdelta diff BASE TARGET PATCH    # PATCH rebuilds TARGET from BASE
//	idxdelta apply BASE PATCH TARGET   # checks the result's length and CRC-32C
//
// The delta is the greedy copy/insert scheme of rsync-like tools (Tridgell's
// rolling checksum): BASE's aligned blocks of blockLen bytes are hashed, every
// offset of TARGET is looked up by a rolling hash, and a verified match is
// extended in both directions as far as the bytes agree.
//
// Patch format: magic "QPDELTA1", the target's length (u64 LE) and CRC-32C
// (u32 LE), then operations: 'C' uvarint(offset in BASE) uvarint(length),
// 'L' uvarint(length) bytes, and 'E' at the end.
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

const (
	magic    = "QPDELTA1"
	blockLen = 64
	mul      = 0x100000001b3 // the rolling hash's multiplier (FNV's prime)
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func main() {
	if len(os.Args) != 5 || (os.Args[1] != "diff" && os.Args[1] != "apply") {
		fmt.Fprintln(os.Stderr, "usage: idxdelta diff BASE TARGET PATCH | idxdelta apply BASE PATCH TARGET")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], os.Args[3], os.Args[4]); err != nil {
		fmt.Fprintf(os.Stderr, "idxdelta: %v\n", err)
		os.Exit(1)
	}
}

func run(cmd, base, in, out string) error {
	b, err := os.ReadFile(base)
	if err != nil {
		return err
	}
	x, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var res []byte
	if cmd == "diff" {
		res = diff(b, x)
	} else if res, err = apply(b, x); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	return os.WriteFile(out, res, 0o644)
}

// pow is mul^blockLen, the weight of the byte leaving the rolling window.
var pow = func() uint64 {
	p := uint64(1)
	for range blockLen {
		p *= mul
	}
	return p
}()

func hashOf(s []byte) uint64 {
	var h uint64
	for _, c := range s {
		h = h*mul + uint64(c)
	}
	return h
}

// diff returns the patch that rebuilds target from base.
func diff(base, target []byte) []byte {
	idx := make(map[uint64]int, len(base)/blockLen)
	for o := 0; o+blockLen <= len(base); o += blockLen {
		h := hashOf(base[o : o+blockLen])
		if _, ok := idx[h]; !ok {
			idx[h] = o
		}
	}
	var w bytes.Buffer
	w.WriteString(magic)
	w.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(target))))
	w.Write(binary.LittleEndian.AppendUint32(nil, crc32.Checksum(target, castagnoli)))
	lit := 0 // target[lit:p] is not covered yet
	literal := func(end int) {
		if end > lit {
			w.WriteByte('L')
			w.Write(binary.AppendUvarint(nil, uint64(end-lit)))
			w.Write(target[lit:end])
		}
	}
	p := 0
	var h uint64
	if len(target) >= blockLen {
		h = hashOf(target[:blockLen])
	}
	for p+blockLen <= len(target) {
		if o, ok := idx[h]; ok && bytes.Equal(base[o:o+blockLen], target[p:p+blockLen]) {
			s, t := o, p // extend backwards over the pending literal
			for s > 0 && t > lit && base[s-1] == target[t-1] {
				s, t = s-1, t-1
			}
			e := p + blockLen
			for e < len(target) && o+(e-p) < len(base) && base[o+(e-p)] == target[e] {
				e++
			}
			literal(t)
			w.WriteByte('C')
			w.Write(binary.AppendUvarint(nil, uint64(s)))
			w.Write(binary.AppendUvarint(nil, uint64(e-t)))
			lit, p = e, e
			if p+blockLen <= len(target) {
				h = hashOf(target[p : p+blockLen])
			}
			continue
		}
		if p+blockLen < len(target) {
			h = h*mul + uint64(target[p+blockLen]) - pow*uint64(target[p])
		}
		p++
	}
	literal(len(target))
	w.WriteByte('E')
	return w.Bytes()
}

// apply rebuilds the target from base and a patch, checking its length
// and CRC-32C.
func apply(base, patch []byte) ([]byte, error) {
	if len(patch) < len(magic)+12 || string(patch[:len(magic)]) != magic {
		return nil, errors.New("not an idxdelta patch")
	}
	n := binary.LittleEndian.Uint64(patch[len(magic):])
	crc := binary.LittleEndian.Uint32(patch[len(magic)+8:])
	r := bufio.NewReader(bytes.NewReader(patch[len(magic)+12:]))
	out := make([]byte, 0, n)
	for {
		op, err := r.ReadByte()
		if err != nil {
			return nil, fmt.Errorf("truncated patch: %w", err)
		}
		switch op {
		case 'E':
			if uint64(len(out)) != n || crc32.Checksum(out, castagnoli) != crc {
				return nil, fmt.Errorf("result of %d bytes does not match the target's length %d and CRC-32C (another base file?)", len(out), n)
			}
			return out, nil
		case 'C':
			o, err1 := binary.ReadUvarint(r)
			l, err2 := binary.ReadUvarint(r)
			if err := errors.Join(err1, err2); err != nil {
				return nil, fmt.Errorf("truncated copy: %w", err)
			}
			if o > uint64(len(base)) || l > uint64(len(base))-o || l > n-uint64(len(out)) {
				return nil, fmt.Errorf("copy of %d bytes at %d out of range", l, o)
			}
			out = append(out, base[o:o+l]...)
		case 'L':
			l, err := binary.ReadUvarint(r)
			if err != nil || l > n-uint64(len(out)) {
				return nil, fmt.Errorf("bad literal length %d: %v", l, err)
			}
			k := len(out)
			out = append(out, make([]byte, l)...)
			if _, err := io.ReadFull(r, out[k:]); err != nil {
				return nil, fmt.Errorf("truncated literal: %w", err)
			}
		default:
			return nil, fmt.Errorf("bad operation byte %#x", op)
		}
	}
}

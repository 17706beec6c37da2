package kern

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/qpengine/qp/cuda"
)

// goLayout is a struct's C name, size and fields (C name, Go offset), from
// the Go mirror's c tags.
type goLayout struct {
	name   string
	size   uintptr
	fields []string
	offs   []uintptr
}

func goLayouts(t *testing.T) []goLayout {
	var ls []goLayout
	for _, v := range sharedLayouts {
		rt := reflect.TypeOf(v)
		l := goLayout{name: rt.Name(), size: rt.Size()}
		for i := 0; i < rt.NumField(); i++ {
			f := rt.Field(i)
			c := f.Tag.Get("c")
			if c == "" {
				t.Fatalf("%s.%s has no c tag", rt.Name(), f.Name)
			}
			l.fields = append(l.fields, c)
			l.offs = append(l.offs, f.Offset)
		}
		ls = append(ls, l)
	}
	return ls
}

// TestLayoutSources (no GPU): the probe kernel lists every mirror's fields
// by their C names in Go's order, and query_params.cuh's static_asserts
// (checked by nvcc and the emulator's g++) state Go's sizes and offsets.
func TestLayoutSources(t *testing.T) {
	probe, err := os.ReadFile("../kernels/layout_probe.cu")
	if err != nil {
		t.Fatal(err)
	}
	params, err := os.ReadFile("../kernels/query_params.cuh")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range regexp.MustCompile(`\tQP_(STRUCT|FIELD)\((\w+), (\w+)\)`).FindAllStringSubmatch(string(probe), -1) {
		got = append(got, m[1]+" "+m[2]+" "+m[3])
	}
	asserts := map[string]uintptr{}
	for _, m := range regexp.MustCompile(`static_assert\((?:sizeof\((\w+)\)|offsetof\((\w+), (\w+)\)) == (\d+),`).FindAllStringSubmatch(string(params), -1) {
		n, _ := strconv.Atoi(m[4])
		if m[1] != "" {
			asserts[m[1]] = uintptr(n)
		} else {
			asserts[m[2]+"."+m[3]] = uintptr(n)
		}
	}
	var want []string
	for _, l := range goLayouts(t) {
		want = append(want, "STRUCT "+l.name+" "+strconv.Itoa(len(l.fields)))
		if n, ok := asserts[l.name]; !ok || n != l.size {
			t.Errorf("static_assert sizeof(%s) == %d (present %v), Go says %d", l.name, n, ok, l.size)
		}
		for i, f := range l.fields {
			want = append(want, "FIELD "+l.name+" "+f)
			if n, ok := asserts[l.name+"."+f]; !ok || n != l.offs[i] {
				t.Errorf("static_assert offsetof(%s, %s) == %d (present %v), Go says %d", l.name, f, n, ok, l.offs[i])
			}
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layout_probe.cu lists\n%q\nGo's mirrors are\n%q\n(regenerate: python3 cuda/scripts/gen_layout.py)", got, want)
	}
}

// TestLayout runs qp_layout_probe: the device compiler's size and field
// offsets of every shared struct equal unsafe.Sizeof/Offsetof of the Go
// mirror.
func TestLayout(t *testing.T) {
	c := gpu(t)
	fb, err := c.Fatbin()
	if err != nil {
		t.Fatal(err)
	}
	f, err := fb.Function("qp_layout_probe")
	if err != nil {
		t.Fatal(err)
	}
	ls := goLayouts(t)
	n := 0
	for _, l := range ls {
		n += 2 + len(l.fields)
	}
	buf, err := c.Alloc(8 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Free()
	probe := struct{ Out cuda.DevicePtr }{buf.Ptr()} // qp_layout_probe(unsigned long long *out)
	if err := cuda.LaunchFields(f, cuda.Dim3{X: 1, Y: 1, Z: 1}, cuda.Dim3{X: 32, Y: 1, Z: 1}, 0, nil, &probe); err != nil {
		t.Fatal(err)
	}
	got := make([]uint64, n)
	if err := cuda.CopyFromDevice(got, buf, 0); err != nil {
		t.Fatal(err)
	}
	i := 0
	for _, l := range ls {
		if got[i] != uint64(len(l.fields)) || got[i+1] != uint64(l.size) {
			t.Errorf("%s: device %d fields of %d bytes, Go %d of %d", l.name, got[i], got[i+1], len(l.fields), l.size)
		}
		for j, f := range l.fields {
			if d := got[i+2+j]; d != uint64(l.offs[j]) {
				t.Errorf("%s.%s at %d on the device, %d in Go", l.name, f, d, l.offs[j])
			}
		}
		i += 2 + len(l.fields)
	}
}

// TestPutLayouts: the Put* helpers write the mirrors' fields where the
// mirrors have them.
func TestPutLayouts(t *testing.T) {
	w := make([]uint32, 16)
	PutTermMeta(w, 1<<40|1, 2<<40|2, 3<<40|3, 4, 5)
	if tm := *(*TermMeta)(unsafe.Pointer(&w[0])); tm != (TermMeta{Skip: 1<<40 | 1, Doc: 2<<40 | 2, Freq: 3<<40 | 3, NB: 4, DF: 5}) {
		t.Errorf("PutTermMeta: %+v", tm)
	}
	PutQMeta(w, 1, 2, 3, 4)
	if m := *(*QMeta)(unsafe.Pointer(&w[0])); m != (QMeta{M: 1, TOff: 2, K: 3, Res: 4}) {
		t.Errorf("PutQMeta: %+v", m)
	}
	PutQTerm(w, 7, 1.5, 2.5, math.MaxFloat32)
	if q := *(*QTerm)(unsafe.Pointer(&w[0])); q != (QTerm{Term: 7, Weight: 1.5, IDF: 2.5, Max: math.MaxFloat32}) {
		t.Errorf("PutQTerm: %+v", q)
	}
	PutSeg(w, 1<<33, 2<<33, 3<<33, 4, 5, 6, 7)
	if s := *(*Seg)(unsafe.Pointer(&w[0])); s != (Seg{D0: 1 << 33, F0: 2 << 33, V0: 3 << 33, Term: 4, Blk0: 5, Q: 6, QT: 7}) {
		t.Errorf("PutSeg: %+v", s)
	}
	PutOQuery(w, 1, 2, 3)
	if o := *(*OQuery)(unsafe.Pointer(&w[0])); o != (OQuery{Seg0: 1, Cap: 2, COff: 3}) {
		t.Errorf("PutOQuery: %+v", o)
	}
}

// TestKernelSignatures (no GPU): every kernel of cuda/kernels is checked
// against a generated parameter list (a static_assert that its type is
// query_params.cuh's QP_SIGNATURE_<Go struct>, or QP_DECODE_KERNEL's,
// which asserts DecodeParams), every such list has its Go struct with one
// field per parameter, and no launcher of this package passes an untyped
// argument list (cuda.Function.Launch).
func TestKernelSignatures(t *testing.T) {
	params, err := os.ReadFile("../kernels/query_params.cuh")
	if err != nil {
		t.Fatal(err)
	}
	sigs := map[string]int{} // Go struct -> parameters
	for _, m := range regexp.MustCompile(`#define QP_SIGNATURE_(\w+) void \(\*\)\(([^)]*)\)`).FindAllStringSubmatch(string(params), -1) {
		sigs[m[1]] = strings.Count(m[2], ",") + 1
	}
	if len(sigs) == 0 {
		t.Fatal("query_params.cuh defines no QP_SIGNATURE_")
	}
	srcs, err := filepath.Glob("../kernels/*.c*")
	if err != nil || len(srcs) == 0 {
		t.Fatalf("no kernel sources: %v", err)
	}
	kernel := regexp.MustCompile(`extern "C" __global__ void (?:__launch_bounds__\((?:[^()]|\([^()]*\))*\)[\s\\]*)?(\w+)\(`)
	asserted := regexp.MustCompile(`static_assert\(std::is_same<decltype\(&(\w+)\), QP_SIGNATURE_(\w+)>::value`)
	// A kernel macro (QP_DECODE_KERNEL, QP_AND_BMSCORE_KERNEL) defines the
	// kernel NAME and asserts its list; each use names one kernel.
	macroDef := regexp.MustCompile(`(?m)^#define (QP_\w+_KERNEL)\(NAME,(?:.*\\\n)*.*`)
	macroUse := regexp.MustCompile(`(?m)^(QP_\w+_KERNEL)\((\w+),`)
	kernels, checked, used := map[string]string{}, map[string]bool{}, map[string]bool{}
	macros := map[string]bool{} // kernel macro -> asserts its kernel's list
	var uses [][]string
	for _, p := range srcs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range kernel.FindAllStringSubmatch(string(b), -1) {
			kernels[m[1]] = p
		}
		for _, m := range asserted.FindAllStringSubmatch(string(b), -1) {
			checked[m[1]], used[m[2]] = true, true
		}
		for _, m := range macroDef.FindAllStringSubmatch(string(b), -1) {
			a := asserted.FindStringSubmatch(m[0])
			macros[m[1]] = a != nil && a[1] == "NAME"
		}
		for _, m := range macroUse.FindAllStringSubmatch(string(b), -1) {
			uses = append(uses, []string{m[1], m[2], p})
		}
	}
	for _, u := range uses {
		kernels[u[1]], checked[u[1]] = u[2], macros[u[0]]
	}
	for _, m := range []string{"QP_DECODE_KERNEL", "QP_AND_BMSCORE_KERNEL"} {
		if !macros[m] {
			t.Errorf("%s is not defined, or does not assert its kernel's list", m)
		}
	}
	if !used["DecodeParams"] || !used["AndBMScoreParams"] {
		t.Error("the kernel macros do not assert DecodeParams and AndBMScoreParams")
	}
	delete(kernels, "NAME") // the kernel macros' own definitions
	delete(kernels, "qp_layout_probe")
	if len(kernels) < 40 {
		t.Fatalf("found only %d kernels: %v", len(kernels), kernels)
	}
	for k, p := range kernels {
		if !checked[k] {
			t.Errorf("kernel %s (%s) has no static_assert against a QP_SIGNATURE_ (cuda/scripts/gen_layout.py)", k, p)
		}
	}
	for s, n := range sigs {
		if !used[s] {
			t.Errorf("QP_SIGNATURE_%s checks no kernel", s)
		}
		if got := goFields(s); got != n {
			t.Errorf("Go struct %s has %d fields, its signature %d parameters", s, got, n)
		}
	}
	gos, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range gos {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if regexp.MustCompile(`\.Launch\(`).Match(b) {
			t.Errorf("%s launches with an untyped argument list (.Launch): pass a layout.go struct with cuda.LaunchFields", p)
		}
	}
}

// goFields is the number of fields of this package's struct of that name
// (-1: none).
func goFields(name string) int {
	for _, v := range paramLists {
		if rt := reflect.TypeOf(v); rt.Name() == name {
			return rt.NumField()
		}
	}
	return -1
}

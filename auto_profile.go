package qp

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/internal/version"
)

// A routing profile: Device Auto's measured stream times, kept across
// runs, so that a repeat run starts on the recorded winner's own stream
// with no race (as FFTW's wisdom keeps the plans it measured: Frigo and
// Johnson, "The Design and Implementation of FFTW3", Proc. IEEE 93(2),
// 2005, §4).
//
// A race costs a 100,000-query run a few percent even when it decides in
// a few ms (both processors contend for the host's cores meanwhile, and
// the loser's pieces are answered at its pace). A later run of the same
// binary over the same index on the same host, with queries of the same
// class, would measure the same winner. So after a stream whose
// processors were both measured, the router records per mode and query
// class each processor's stream time per query; a later stream whose key
// matches seeds its stream state with them and starts on the winner's
// own stream. The record is re-checked at a bounded cost: a stream races
// again where the recorded margin is under profileMargin, and after
// profileRecheck streams routed by the record.
//
// The key: the profile's identity (the index file's size, modification
// time and a hash of its first 4 KiB; the binary's version, commit and
// executable's size and time;
// the host's core count and CPU workers; the GPU's name), the stream's
// mode and its class (queryClass). An entry of another identity is not
// used (a rebuilt index, a new binary, another host); the file keeps the
// newest profileEntries entries. The file is written atomically (a
// temporary file renamed over it); one that cannot be read or parsed is
// ignored with a one-line notice and rewritten, never fatal.

const (
	// profileMargin: a recorded winner less than this factor faster than
	// the other processor is re-raced on every run.
	profileMargin = 1.3
	// profileRecheck: streams routed by one record before a race
	// re-measures it.
	profileRecheck = 8
	// profileEntries bounds the file's entries (the newest kept).
	profileEntries = 256
	// profileFormat is the file's format version.
	profileFormat = 1
	// profileSample: queries of the stream's first chunk whose lists
	// classify it.
	profileSample = 1024
	// profileHeader: bytes of the index file hashed into its identity.
	profileHeader = 4096
)

// profileFile is the file's JSON.
type profileFile struct {
	Format  int            `json:"format"`
	Entries []profileEntry `json:"entries"`
}

// profileEntry is one key's record.
type profileEntry struct {
	Identity string  `json:"identity"`
	Index    string  `json:"index"` // the index's path, for the stale notice
	Mode     string  `json:"mode"`
	Class    string  `json:"class"`
	CPU      float64 `json:"cpu_s_per_query"`
	GPU      float64 `json:"gpu_s_per_query"`
	Runs     int     `json:"runs"` // streams routed by it since its last race
	Updated  string  `json:"updated"`
}

// profile is an open routing profile.
type profile struct {
	path, index, identity string
	notice                func(string)
	df                    func(terms []string, dfs []uint32) // each term's document frequency

	mu     sync.Mutex
	loaded bool
	file   profileFile
	noted  bool // the stale notice was given
}

// DefaultProfilePath is the routing profile's default path,
// os.UserCacheDir()/qp/auto-profile.json ("" when the host has no cache
// directory).
func DefaultProfilePath() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "qp", "auto-profile.json")
}

// indexIdentity is the part of a profile's identity from the index file
// at path: its size, modification time and a hash of its first bytes.
func indexIdentity(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	h := fnv.New64a()
	if _, err := io.CopyN(h, f, profileHeader); err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return fmt.Sprintf("index %d bytes, %s, %016x", st.Size(), st.ModTime().UTC().Format(time.RFC3339Nano), h.Sum64()), nil
}

// profileIdentity is a profile's identity: the index's, the binary's
// version, commit and executable file, the host's cores, the CPU workers
// and the GPU.
func profileIdentity(index string, workers int, gpuName string) string {
	v := version.Get()
	rev := v.Revision
	if v.Modified {
		rev += "+modified"
	}
	// The executable's size and time: builds without a commit (go
	// build in a worktree) or of a modified tree differ by them.
	exe := ""
	if path, err := os.Executable(); err == nil {
		if st, err := os.Stat(path); err == nil {
			exe = fmt.Sprintf(" (%d bytes, %s)", st.Size(), st.ModTime().UTC().Format(time.RFC3339))
		}
	}
	return fmt.Sprintf("%s; qp %s %s%s; %d cores, %d workers; gpu %s", index, v.Version, rev, exe, runtime.NumCPU(), workers, gpuName)
}

// openProfile opens the profile at path for the index at indexPath; nil
// (with a notice) where the path is the index's own directory, or where
// the index's identity cannot be read.
func openProfile(path, indexPath string, workers int, gpuName string, df func([]string, []uint32), notice func(string)) *profile {
	ap, _ := filepath.Abs(path)
	ai, _ := filepath.Abs(indexPath)
	if ap == ai || filepath.Dir(ap) == filepath.Dir(ai) {
		notice(fmt.Sprintf("qp: auto profile %s: beside the index, not used", path))
		return nil
	}
	id, err := indexIdentity(indexPath)
	if err != nil {
		notice(fmt.Sprintf("qp: auto profile: %v; not used", err))
		return nil
	}
	return &profile{path: path, index: ai, identity: profileIdentity(id, workers, gpuName), notice: notice, df: df}
}

// load reads the file once (under mu); a missing file is an empty
// profile, a corrupt one is noted and replaced on the next save.
func (p *profile) load() {
	if p.loaded {
		return
	}
	p.loaded = true
	data, err := os.ReadFile(p.path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var f profileFile
	if err == nil {
		err = json.Unmarshal(data, &f)
		if err == nil && f.Format != profileFormat {
			err = fmt.Errorf("format %d, want %d", f.Format, profileFormat)
		}
	}
	if err != nil {
		p.notice(fmt.Sprintf("qp: auto profile %s ignored (%v); it will be rewritten", p.path, err))
		return
	}
	p.file = f
}

// find returns the index of key's entry, -1 when none.
func (p *profile) find(mode, class string) int {
	return slices.IndexFunc(p.file.Entries, func(e profileEntry) bool {
		return e.Identity == p.identity && e.Mode == mode && e.Class == class
	})
}

// lookup returns the recorded stream times (seconds a query: CPU, GPU) of
// mode and class where a stream may start on them without a race: both
// recorded, the winner at least profileMargin faster, fewer than
// profileRecheck streams routed since the last race.
func (p *profile) lookup(mode, class string) (per [2]float64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.load()
	i := p.find(mode, class)
	if i < 0 {
		if !p.noted && slices.ContainsFunc(p.file.Entries, func(e profileEntry) bool { return e.Index == p.index && e.Identity != p.identity }) {
			p.noted = true
			p.notice(fmt.Sprintf("qp: auto profile %s: recorded for another state of the index, binary or host; racing", p.path))
		}
		return per, false
	}
	e := p.file.Entries[i]
	if !(e.CPU > 0 && e.GPU > 0) || max(e.CPU, e.GPU) < profileMargin*min(e.CPU, e.GPU) || e.Runs >= profileRecheck {
		return per, false
	}
	return [2]float64{procCPU: e.CPU, procGPU: e.GPU}, true
}

// record stores mode and class's stream times (raced: measured by a race
// in this stream, else routed by the record) and writes the file.
func (p *profile) record(mode, class string, per [2]float64, raced bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.load()
	e := profileEntry{Identity: p.identity, Index: p.index, Mode: mode, Class: class, CPU: per[procCPU], GPU: per[procGPU],
		Updated: time.Now().UTC().Format(time.RFC3339)}
	if i := p.find(mode, class); i >= 0 {
		if !raced {
			e.Runs = p.file.Entries[i].Runs + 1
		}
		p.file.Entries = slices.Delete(p.file.Entries, i, i+1)
	}
	p.file.Format = profileFormat
	p.file.Entries = append(p.file.Entries, e)
	if n := len(p.file.Entries); n > profileEntries {
		p.file.Entries = p.file.Entries[n-profileEntries:]
	}
	if err := p.save(); err != nil {
		p.notice(fmt.Sprintf("qp: auto profile %s not written: %v", p.path, err))
	}
}

// save writes the file atomically: a temporary file in its directory,
// renamed over it.
func (p *profile) save() error {
	data, err := json.MarshalIndent(p.file, "", " ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(p.path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".auto-profile-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(data, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// queryClass is a coarse signature of a stream's queries, from up to
// profileSample of its first chunk's: the mode, the bucket (⌊log2⌋) of
// the median shortest list's document frequency and the mean term count
// rounded. The CPU's and the GPU's costs follow the lists a query
// decodes: GCIDE TREC'06 (short queries, long lists) and known-item
// queries (more terms, rarer) fall in different classes, and the CPU
// wins the first's AND, the GPU the second's.
func queryClass(qs []engine.Query, chunk int, df func([]string, []uint32)) string {
	n := min(len(qs), chunk)
	step := max(n/profileSample, 1)
	var shortest []uint32
	var dfs []uint32
	terms, counted := 0, 0
	for i := 0; i < n; i += step {
		t := qs[i].Terms
		if len(t) == 0 {
			continue
		}
		dfs = slices.Grow(dfs[:0], len(t))[:len(t)]
		df(t, dfs)
		shortest = append(shortest, slices.Min(dfs))
		terms += len(t)
		counted++
	}
	if counted == 0 {
		return "empty"
	}
	slices.Sort(shortest)
	med := shortest[len(shortest)/2]
	return fmt.Sprintf("df2^%d/t%d", bits.Len32(med), (2*terms+counted)/(2*counted))
}

// modeName is the profile's name of a mode key (modeKey).
func modeName(key int) string {
	if key == 0 {
		return "mixed"
	}
	return engine.Mode(key).String()
}

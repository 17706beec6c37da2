// Package version reports qp's version: a release constant plus the VCS
// revision that `go build` records in the binary (runtime/debug.BuildInfo).
package version

import (
	"fmt"
	"runtime/debug"
)

// Version is the release of qp. Bump it with each release; between
// releases the commit (vcs.revision) identifies the build.
const Version = "0.9.0-dev"

// stampedRevision and stampedModified are set by `make build` with
// -ldflags -X (from git rev-parse HEAD and git status), for builds where
// the go command records no VCS information (GOFLAGS=-buildvcs=false, a git
// worktree). The VCS information, when present, wins.
var stampedRevision, stampedModified string

// Info is what String prints.
type Info struct {
	Version   string
	Revision  string // vcs.revision, "" when the binary has no VCS information
	Time      string // vcs.time
	Modified  bool   // vcs.modified: built from a tree with uncommitted changes
	GoVersion string
}

// Get reads the build information of the running binary. A binary built
// with `go build` inside the git checkout has the revision; `go run`, `go
// test` and builds with -buildvcs=false do not.
func Get() Info {
	in := Info{Version: Version}
	if bi, ok := debug.ReadBuildInfo(); ok {
		in = fromBuildInfo(bi)
	}
	if in.Revision == "" && stampedRevision != "" {
		in.Revision, in.Modified = stampedRevision, stampedModified == "true"
	}
	return in
}

func fromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Version: Version, GoVersion: bi.GoVersion}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// String is one line: "qp 0.9.0-dev (commit 0123abc..., 2026-11-25T19:00:00Z,
// modified) go1.26.8"; "commit unknown" without VCS information.
func (in Info) String() string {
	commit := "commit unknown"
	if in.Revision != "" {
		commit = "commit " + in.Revision
		if in.Time != "" {
			commit += ", " + in.Time
		}
		if in.Modified {
			commit += ", modified"
		}
	}
	s := fmt.Sprintf("qp %s (%s)", in.Version, commit)
	if in.GoVersion != "" {
		s += " " + in.GoVersion
	}
	return s
}

package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "b3d41c3aa"}, {Key: "vcs.time", Value: "2026-11-25T19:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	got := fromBuildInfo(bi).String()
	want := "qp " + Version + " (commit b3d41c3aa, 2026-11-25T19:00:00Z, modified) go1.26.8"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	bi.Settings = bi.Settings[:1]
	if got := fromBuildInfo(bi).String(); !strings.Contains(got, "commit b3d41c3aa)") || strings.Contains(got, "modified") {
		t.Errorf("clean tree: %q", got)
	}
	if got := fromBuildInfo(&debug.BuildInfo{}).String(); got != "qp "+Version+" (commit unknown)" {
		t.Errorf("no VCS information: %q", got)
	}
	if Version == "" {
		t.Error("empty Version")
	}
}

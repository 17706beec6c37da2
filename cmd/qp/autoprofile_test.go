package main

import (
	"flag"
	"io"
	"testing"

	"github.com/qpengine/qp"
)

// TestAutoProfileFlag: --auto-profile's default is the user's cache
// directory's profile, "off" none, a path that path; only device auto's
// GPU route uses it (qp.Options.AutoProfile).
func TestAutoProfileFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, qp.DefaultProfilePath()},
		{[]string{"--auto-profile", "off"}, ""},
		{[]string{"--auto-profile", "/tmp/p.json"}, "/tmp/p.json"},
	} {
		fs := flag.NewFlagSet("query", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		qf := addQueryFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		o, err := qf.options()
		if err != nil {
			t.Fatal(err)
		}
		if o.AutoProfile != c.want {
			t.Errorf("%q: AutoProfile %q, want %q", c.args, o.AutoProfile, c.want)
		}
	}
}

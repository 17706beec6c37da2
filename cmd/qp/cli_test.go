package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMain lets a test run the real main() in a child process (runQP), to
// check exit statuses, standard error and signal handling as a user sees
// them.
func TestMain(m *testing.M) {
	if os.Getenv("QP_TEST_MAIN") == "1" {
		os.Args = append([]string{"qp"}, strings.Split(os.Getenv("QP_TEST_ARGS"), "\x1f")...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// qpCmd returns the command that runs `qp args...` in a child process.
func qpCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "QP_TEST_MAIN=1", "QP_TEST_ARGS="+strings.Join(args, "\x1f"))
	return cmd
}

// runQP runs `qp args...` and returns its standard output, standard error
// and exit status.
func runQP(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := qpCmd(args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("qp %s: %v", strings.Join(args, " "), err)
	}
	return o.String(), e.String(), code
}

// TestVersion: `qp --version` and `qp version` print the version line
// (issue 19 case 14).
func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "version", "-V"} {
		out, errOut, code := runQP(t, arg)
		if code != 0 || !strings.HasPrefix(out, "qp ") || !strings.Contains(out, "(commit ") {
			t.Errorf("qp %s: exit %d, stdout %q, stderr %q", arg, code, out, errOut)
		}
	}
}

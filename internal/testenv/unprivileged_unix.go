//go:build unix

package testenv

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nobodyID is the uid and gid of nobody where the user database has none.
const nobodyID = 65534

func isRoot() bool { return os.Geteuid() == 0 }

// nobody returns the credentials of the user nobody, without supplementary
// groups.
func nobody() *syscall.Credential {
	uid, gid := uint32(nobodyID), uint32(nobodyID)
	if u, err := user.Lookup("nobody"); err == nil {
		if n, err := strconv.ParseUint(u.Uid, 10, 32); err == nil {
			uid = uint32(n)
		}
		if n, err := strconv.ParseUint(u.Gid, 10, 32); err == nil {
			gid = uint32(n)
		}
	}
	return &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}
}

// runAsNobody runs t's test again in a copy of the test binary as nobody
// and reports its outcome in t.
func runAsNobody(t *testing.T) {
	t.Helper()
	cred := nobody()
	dir, err := os.MkdirTemp(reachableTempDir(), "openctl-unprivileged-")
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	bin, err := copyTestBinary(dir)
	if err != nil {
		t.Fatalf("testenv: copying the test binary where nobody can run it: %v", err)
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	if err := os.Chown(tmp, int(cred.Uid), int(cred.Gid)); err != nil {
		t.Fatalf("testenv: %v", err)
	}

	args := []string{"-test.run=" + runPattern(t.Name()), "-test.count=1", "-test.v=true"}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	ctx := t.Context()
	if deadline, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
		args = append(args, "-test.timeout="+max(time.Until(deadline), time.Second).Round(time.Second).String())
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), EnvUnprivileged+"=1", "TMPDIR="+tmp)
	cmd.Dir = dir
	if wd, err := os.Getwd(); err == nil && traversable(wd) {
		cmd.Dir = wd
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	output := out.String()
	t.Logf("testenv: ran as uid %d gid %d: %s %s\n%s", cred.Uid, cred.Gid, bin, strings.Join(args, " "), output)
	switch {
	case runErr != nil:
		t.Fatalf("testenv: the unprivileged run failed: %v", runErr)
	case strings.Contains(output, "--- SKIP: "+t.Name()+" "):
		t.Skip("testenv: the unprivileged run skipped the test")
	case !strings.Contains(output, "--- PASS: "+t.Name()+" "):
		t.Fatalf("testenv: the unprivileged run did not run %s", t.Name())
	}
}

// copyTestBinary copies the running test binary into dir, where nobody can
// run it: go test builds it in a directory only its owner can enter.
func copyTestBinary(dir string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	src, err := os.Open(self)
	if err != nil {
		return "", err
	}
	defer src.Close()
	path := filepath.Join(dir, filepath.Base(self))
	dst, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return "", err
	}
	if err := dst.Close(); err != nil {
		return "", err
	}
	return path, nil
}

// reachableTempDir returns os.TempDir() if other users can traverse it
// and every directory above it, else /tmp.
func reachableTempDir() string {
	if d := os.TempDir(); traversable(d) {
		return d
	}
	return "/tmp"
}

// traversable reports whether other users may enter dir and every
// directory above it.
func traversable(dir string) bool {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for {
		st, err := os.Stat(dir)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return true
		}
		dir = parent
	}
}

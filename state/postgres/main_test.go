package postgres_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/secret"
	"github.com/openctl/openctl/state"
	"github.com/openctl/openctl/state/postgres"
	"github.com/openctl/openctl/state/postgres/pgtest"
)

// The test binary doubles as the helper process of the multi-process lock
// tests: with helperEnv set it runs a helper instead of the tests.
const (
	helperEnv    = "OPENCTL_PGTEST_HELPER"     // "hold" or "race"
	helperDSNEnv = "OPENCTL_PGTEST_HELPER_DSN" // the database
	testScope    = "default"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode, os.Getenv(helperDSNEnv)))
	}
	pgtest.Main(m)
}

// passphrase is the test stores' passphrase function.
func passphrase() (secret.Secret, error) { return secret.New("correct horse battery staple"), nil }

// openStore opens a Store on dsn, closed when t ends.
func openStore(t testing.TB, dsn string) *postgres.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := postgres.Open(ctx, dsn, postgres.Options{Passphrase: passphrase})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// newStore opens a Store on a fresh database.
func newStore(t testing.TB) (*postgres.Store, string) {
	t.Helper()
	dsn := pgtest.Start(t)
	return openStore(t, dsn), dsn
}

// helper is the child process: it opens the store and
//
//   - "hold": takes the lock, prints "locked", and holds it until stdin
//     closes (or the process is killed);
//   - "race": prints "ready", waits for a line on stdin, tries the lock
//     once and prints "won" (then holds it until stdin closes) or
//     "lost <holder pid> <error code>".
func helper(mode, dsn string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := postgres.Open(ctx, dsn, postgres.Options{Passphrase: passphrase})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	defer s.Close()
	in := bufio.NewScanner(os.Stdin)
	if mode == "race" {
		fmt.Println("ready")
		if !in.Scan() {
			return 1
		}
	}
	unlock, err := s.Lock(ctx, testScope, state.NewLockInfo("helper-"+mode))
	var le *state.LockedError
	switch {
	case errors.As(err, &le):
		fmt.Println("lost", le.Holder.PID, errcode.Of(err))
		return 0
	case err != nil:
		fmt.Println("error", strings.ReplaceAll(err.Error(), "\n", " "))
		return 1
	}
	if mode == "race" {
		fmt.Println("won")
	} else {
		fmt.Println("locked")
	}
	for in.Scan() { // hold until stdin closes
	}
	if err := unlock(); err != nil {
		fmt.Println("error", err)
		return 1
	}
	return 0
}

// child is a running helper process.
type child struct {
	cmd   *exec.Cmd
	stdin interface{ Close() error }
	write func(string) error
	lines chan string
}

// startChild runs the test binary as a helper in mode on dsn. It is killed
// when t ends, if still running.
func startChild(t *testing.T, mode, dsn string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// A race-enabled binary sleeps a second at exit unless told not to.
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperDSNEnv+"="+dsn,
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	c := &child{cmd: cmd, stdin: stdin, lines: make(chan string, 16)}
	c.write = func(s string) error { _, err := stdin.Write([]byte(s)); return err }
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return c
}

// line returns the child's next line of output.
func (c *child) line(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-c.lines:
		require.True(t, ok, "helper %d exited without output", c.cmd.Process.Pid)
		return l
	case <-time.After(30 * time.Second):
		t.Fatalf("helper %d said nothing for 30s", c.cmd.Process.Pid)
		return ""
	}
}

package state_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/state"
)

// TestLockRaceHelper is a child of TestFileStoreLockRace: it prints
// "ready", waits for a line on stdin, tries the lock and prints "won PID"
// (then holds the lock until stdin closes) or "lost CODE PID".
func TestLockRaceHelper(t *testing.T) {
	dir := os.Getenv(envLockRaceDir)
	if dir == "" {
		t.Skip("helper process for TestFileStoreLockRace")
	}
	s, err := state.OpenFile(dir, state.FileOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	in := bufio.NewReader(os.Stdin)
	fmt.Println("ready")
	if _, err := in.ReadString('\n'); err != nil {
		os.Exit(3)
	}
	unlock, err := s.Lock(t.Context(), state.DefaultScope, state.NewLockInfo("race"))
	if err != nil {
		var le *state.LockedError
		pid := -1
		if ok := asLocked(err, &le); ok {
			pid = le.Holder.PID
		}
		fmt.Printf("lost %s %d\n", errcode.Of(err), pid)
		os.Exit(0)
	}
	fmt.Printf("won %d\n", os.Getpid())
	_, _ = io.Copy(io.Discard, in)
	if err := unlock(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	os.Exit(0)
}

func asLocked(err error, le **state.LockedError) bool {
	for err != nil {
		if l, ok := err.(*state.LockedError); ok {
			*le = l
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

type raceChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// TestFileStoreLockRace starts two processes racing for one lock: exactly
// one wins, the other gets CONFLICT naming the winner's pid.
func TestFileStoreLockRace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	_, err := state.OpenFile(dir, state.FileOptions{})
	require.NoError(t, err)
	for round := range 5 {
		kids := make([]*raceChild, 2)
		for i := range kids {
			cmd := exec.Command(os.Args[0], "-test.run=^TestLockRaceHelper$", "-test.count=1")
			cmd.Env = helperEnv(envLockRaceDir, dir)
			cmd.Stderr = os.Stderr
			stdin, err := cmd.StdinPipe()
			require.NoError(t, err)
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			kids[i] = &raceChild{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		}
		for _, k := range kids {
			line, err := k.out.ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, "ready\n", line)
		}
		for _, k := range kids {
			_, err := io.WriteString(k.stdin, "go\n")
			require.NoError(t, err)
		}
		results := make([]string, len(kids))
		for i, k := range kids {
			line, err := k.out.ReadString('\n')
			require.NoError(t, err)
			results[i] = strings.TrimSpace(line)
		}
		var winner, loser string
		var winnerPID int
		for i, r := range results {
			if strings.HasPrefix(r, "won ") {
				require.Empty(t, winner, "round %d: two winners: %v", round, results)
				winner, winnerPID = r, kids[i].cmd.Process.Pid
			} else {
				loser = r
			}
		}
		require.NotEmpty(t, winner, "round %d: no winner: %v", round, results)
		assert.Equal(t, fmt.Sprintf("won %d", winnerPID), winner)
		assert.Equal(t, fmt.Sprintf("lost %s %d", errcode.Conflict, winnerPID), loser, "round %d", round)
		for _, k := range kids {
			require.NoError(t, k.stdin.Close())
			require.NoError(t, k.cmd.Wait())
		}
		_, err := os.Stat(filepath.Join(dir, "locks", "default.lock"))
		require.True(t, os.IsNotExist(err), "round %d: the winner's unlock removed the lock file", round)
	}
}

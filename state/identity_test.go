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

// envStoreIDDir makes the test binary a TestStoreIDHelper process.
const envStoreIDDir = "OPENCTL_TEST_STOREID_DIR"

// TestStoreIDHelper is a child of TestFileStoreIDAcrossProcesses: it
// opens the store, prints "ready", waits for a line on stdin and prints
// the store's identity.
func TestStoreIDHelper(t *testing.T) {
	dir := os.Getenv(envStoreIDDir)
	if dir == "" {
		t.Skip("helper process for TestFileStoreIDAcrossProcesses")
	}
	s, err := state.OpenFile(dir, state.FileOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		os.Exit(3)
	}
	id, err := s.StoreID(t.Context())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	fmt.Println("id", id)
	os.Exit(0)
}

// Processes that open a new file store at the same moment agree on its
// identity; the file holding it is 0600; reopening keeps it; another
// store has another.
func TestFileStoreIDAcrossProcesses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	type child struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Reader
	}
	kids := make([]child, 4)
	for i := range kids {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStoreIDHelper$", "-test.count=1")
		cmd.Env = helperEnv(envStoreIDDir, dir)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		kids[i] = child{cmd, stdin, bufio.NewReader(stdout)}
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
	var ids []string
	for _, k := range kids {
		line, err := k.out.ReadString('\n')
		require.NoError(t, err)
		id, ok := strings.CutPrefix(strings.TrimSpace(line), "id ")
		require.True(t, ok, "child said %q", line)
		ids = append(ids, id)
		require.NoError(t, k.cmd.Wait())
	}
	for _, id := range ids {
		assert.Equal(t, ids[0], id, "every process gets the same identity: %v", ids)
	}

	st, err := os.Stat(filepath.Join(dir, "store-id"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	again, err := state.OpenFile(dir, state.FileOptions{})
	require.NoError(t, err)
	id, err := again.StoreID(t.Context())
	require.NoError(t, err)
	assert.Equal(t, ids[0], id, "reopening keeps the identity")
	other := newFileStore(t)
	oid, err := other.StoreID(t.Context())
	require.NoError(t, err)
	assert.NotEqual(t, ids[0], oid, "another store, another identity")
	leftovers, err := filepath.Glob(filepath.Join(dir, ".store-id*"))
	require.NoError(t, err)
	assert.Empty(t, leftovers, "no temporary files left")
}

func TestFileStoreIDDamaged(t *testing.T) {
	s := newFileStore(t)
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir(), "store-id"), []byte("not an id\n"), 0o600))
	_, err := s.StoreID(t.Context())
	require.Error(t, err)
	assert.True(t, errcode.Is(err, errcode.Invalid), "got %v", err)
	assert.Contains(t, err.Error(), "damaged")
}

// A copy into an empty store carries the source's identity; the source
// keeps it.
func TestCopyCarriesIdentityBetweenStoreKinds(t *testing.T) {
	ctx := t.Context()
	src := newFileStore(t)
	fillCopySource(t, src, 2)
	want, err := src.StoreID(ctx)
	require.NoError(t, err)
	dst := newKeyedMemory(t)
	_, err = state.Copy(ctx, src, dst)
	require.NoError(t, err)
	got, err := dst.StoreID(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	back := newFileStore(t)
	_, err = state.Copy(ctx, dst, back)
	require.NoError(t, err)
	got, err = back.StoreID(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, got, "and back into a file store")
}

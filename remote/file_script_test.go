package remote

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWriteFileScriptSignalledDuringMktemp runs WriteFile's script with
// this machine's sh and an mktemp that, once it has made the temporary
// file, sends SIGTERM to the script's whole process group, as Run's
// wrapper does on a cancel — before printing the name (mktemp dies of it)
// or after. Either way the script leaves the old file and no temporary
// one. Before the traps came ahead of mktemp, a signal in that window
// left the temporary file behind (seen once in a loaded suite run).
func TestWriteFileScriptSignalledDuringMktemp(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on this machine")
	}
	realMktemp, err := exec.LookPath("mktemp")
	if err != nil {
		t.Skip("no mktemp on this machine")
	}
	for _, when := range []string{"before-print", "after-print"} {
		t.Run(when, func(t *testing.T) {
			bin := t.TempDir()
			fake := `#!/bin/sh
f=$(` + realMktemp + ` "$@") || exit 1
[ "$WHEN" = after-print ] && echo "$f"
kill -TERM 0
sleep 5
echo "$f"
`
			require.NoError(t, os.WriteFile(filepath.Join(bin, "mktemp"), []byte(fake), 0o755))
			dir := t.TempDir()
			target := filepath.Join(dir, "f")
			require.NoError(t, os.WriteFile(target, []byte("old\n"), 0o644))

			cmd := exec.Command(sh, "-c", writeFileScript(target, 0o644, "openctl-end-TEST", "ID"))
			cmd.Env = append(os.Environ(), "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"), "WHEN="+when)
			cmd.Stdin = strings.NewReader("new\nopenctl-end-TEST")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the kill stays in its group
			err := cmd.Run()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "the script is ended by the signal")

			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			assert.Equal(t, []string{"f"}, names, "no temporary file left")
			got, err := os.ReadFile(target)
			require.NoError(t, err)
			assert.Equal(t, "old\n", string(got))
		})
	}
}

// TestWriteFileScriptInstalls: the same script, undisturbed, installs the
// content without its end marker and with the mode asked for.
func TestWriteFileScriptInstalls(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on this machine")
	}
	target := filepath.Join(t.TempDir(), "sub", "f")
	cmd := exec.Command(sh, "-c", writeFileScript(target, 0o640, "openctl-end-TEST", "ID"))
	cmd.Stdin = strings.NewReader("new\nopenctl-end-TEST")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "new\n", string(got))
	st, err := os.Stat(target)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), st.Mode().Perm())
	entries, err := os.ReadDir(filepath.Dir(target))
	require.NoError(t, err)
	assert.Len(t, entries, 1)
}

package k3slite

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/internal/k3semu"
	"github.com/openctl/openctl/sandbox/vmhost"
)

// The emulator core runs on two file systems: the stand-in's (the
// machine's, k3semu.OSFS) and the sandbox's (a simulated host's, hostFS).
// The same server start, token rotation files and certificate rotation on
// both must leave the same tree: the same files, modes and links.
func TestHostFSMatchesOSFS(t *testing.T) {
	h, err := vmhost.New(t.TempDir(), vmhost.Options{Hostname: "cp-0"})
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	hostRoot := "/var/lib/rancher/k3s"
	osRoot := filepath.Join(t.TempDir(), "k3s")

	now := time.Unix(1_800_000_000, 0)
	run := func(f k3semu.FS, dataDir string) {
		t.Helper()
		env := func(string) (string, bool) { return "", false }
		cfg, err := k3semu.ParseServerArgs(f, []string{"--cluster-init", "--token", "s3cret", "--node-name", "cp-0",
			"--data-dir", dataDir, "--write-kubeconfig", path.Join(dataDir, "k3s.yaml"), "--tls-san", "10.0.0.10"}, env)
		require.NoError(t, err)
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		prep, err := k3semu.PrepareServer(context.Background(), f, cfg, net.IPv4(10, 0, 0, 1), false, log)
		require.NoError(t, err)
		assert.False(t, prep.Joining)
		require.NoError(t, k3semu.RotateCertificates(f, k3semu.CertRotateOptions{DataDir: dataDir, Services: []string{"admin"}}, now, log))
	}
	run(hostFS{h: h}, hostRoot)
	run(k3semu.OSFS{}, osRoot)

	hostTree, err := tree(h.FS(), strings.TrimPrefix(hostRoot, "/"), func(p string) (string, error) {
		var out, errOut bytes.Buffer
		st, err := h.Run(t.Context(), "readlink "+q("/"+p), nil, &out, &errOut, nil, "root")
		if err == nil && st != 0 {
			err = fmt.Errorf("readlink %s: %s", p, errOut.String())
		}
		return strings.TrimSpace(out.String()), err
	})
	require.NoError(t, err)
	osTree, err := tree(os.DirFS(osRoot), ".", func(p string) (string, error) { return os.Readlink(filepath.Join(osRoot, p)) })
	require.NoError(t, err)
	assert.Greater(t, len(hostTree), 20, "%q", hostTree)
	assert.Equal(t, osTree, hostTree)
	assert.Contains(t, hostTree, "server/node-token -> "+hostRoot+"/server/token")
	assert.Contains(t, hostTree, "server/tls-1800000000/client-admin.key 0600")
	assert.NotContains(t, strings.Join(hostTree, "\n"), "server/tls/client-admin.crt", "rotated away")
}

// tree lists what is under dir in fsys, one line a file: its path, its
// mode, and where a link points (readlink, with the data directory
// written as the host's).
func tree(fsys fs.FS, dir string, readlink func(string) (string, error)) ([]string, error) {
	var out []string
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, dir), "/")
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := readlink(p)
			if err != nil {
				return err
			}
			// The host's link names /var/lib/rancher/k3s/...; the
			// machine's names the temporary directory.
			if i := strings.Index(target, "/server/"); i >= 0 {
				target = "/var/lib/rancher/k3s" + target[i:]
			}
			out = append(out, rel+" -> "+target)
		case d.IsDir():
			out = append(out, rel+"/")
		default:
			info, err := d.Info()
			if err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("%s %04o", rel, info.Mode().Perm()))
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

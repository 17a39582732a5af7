package kubeconfig_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openctl/openctl/errcode"
	"github.com/openctl/openctl/k3s/kubeconfig"
)

// lab is the kubeconfig Rewrite makes of k3sYAML for the cluster "lab".
func lab(t testing.TB) []byte {
	t.Helper()
	b, err := kubeconfig.Rewrite([]byte(k3sYAML), "https://10.0.0.10:6443", "lab")
	require.NoError(t, err)
	return b
}

// entries returns the file's directory listing, to check that no
// temporary or lock file is left behind.
func entries(t testing.TB, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func TestWrite(t *testing.T) {
	t.Run("new file and directories", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "a", "b", "config")
		require.NoError(t, kubeconfig.Write(path, lab(t)))
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, string(lab(t)), string(got))
		assert.Equal(t, os.FileMode(0o600), mode(t, path))
		assert.Equal(t, os.FileMode(0o700), mode(t, filepath.Join(dir, "a")))
		assert.Equal(t, os.FileMode(0o700), mode(t, filepath.Join(dir, "a", "b")))
		assert.Equal(t, []string{"config"}, entries(t, filepath.Join(dir, "a", "b")))
	})
	t.Run("replaces a 0644 file with a 0600 one", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config")
		require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
		require.NoError(t, os.Chmod(path, 0o644))
		require.NoError(t, kubeconfig.Write(path, lab(t)))
		assert.Equal(t, os.FileMode(0o600), mode(t, path))
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, string(lab(t)), string(got))
		assert.Equal(t, []string{"config"}, entries(t, filepath.Dir(path)))
	})
	t.Run("through a symbolic link", func(t *testing.T) {
		dir := t.TempDir()
		target := filepath.Join(dir, "dotfiles", "kubeconfig")
		require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o700))
		require.NoError(t, os.WriteFile(target, []byte("old"), 0o600))
		link := filepath.Join(dir, "config")
		require.NoError(t, os.Symlink(filepath.Join("dotfiles", "kubeconfig"), link))
		require.NoError(t, kubeconfig.Write(link, lab(t)))
		st, err := os.Lstat(link)
		require.NoError(t, err)
		assert.NotZero(t, st.Mode()&os.ModeSymlink, "the link is kept")
		got, err := os.ReadFile(target)
		require.NoError(t, err)
		assert.Equal(t, string(lab(t)), string(got))
	})
	t.Run("refuses what is not a kubeconfig", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config")
		requireCode(t, kubeconfig.Write(path, []byte("{{{")), errcode.Invalid)
		assert.NoFileExists(t, path)
	})
	t.Run("a directory in the way", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config")
		require.NoError(t, os.MkdirAll(filepath.Join(path, "x"), 0o700))
		requireCode(t, kubeconfig.Write(path, lab(t)), errcode.Internal)
		assert.Equal(t, []string{"config"}, entries(t, filepath.Dir(path)), "no temporary file left")
	})
}

// userConfig is a ~/.kube/config with a "prod" cluster (current), and a
// stale "lab" whose server is old.
func userConfig(t testing.TB) []byte {
	t.Helper()
	cfg := loadConfig(t, oneCluster(t, "prod", "https://prod.example:6443"))
	old := loadConfig(t, oneCluster(t, "lab", "https://192.168.1.1:6443"))
	cfg.Clusters["lab"] = old.Clusters["lab"]
	cfg.AuthInfos["lab"] = old.AuthInfos["lab"]
	cfg.Contexts["lab"] = old.Contexts["lab"]
	cfg.Contexts["lab-admin"] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: "prod", Namespace: "kube-system"}
	cfg.Preferences.Colors = true
	return encode(t, cfg)
}

func TestMerge(t *testing.T) {
	t.Run("replaces same-named entries, keeps the rest", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config")
		require.NoError(t, os.WriteFile(path, userConfig(t), 0o644))
		require.NoError(t, kubeconfig.Merge(t.Context(), path, lab(t)))

		got, err := os.ReadFile(path)
		require.NoError(t, err)
		cfg := loadConfig(t, got)
		clusters, users, contexts := keys(cfg)
		assert.Equal(t, []string{"lab", "prod"}, clusters)
		assert.Equal(t, []string{"lab", "prod"}, users)
		assert.Equal(t, []string{"lab", "lab-admin", "prod"}, contexts)
		assert.Equal(t, "prod", cfg.CurrentContext, "the file's current context is kept")
		assert.Equal(t, "https://10.0.0.10:6443", cfg.Clusters["lab"].Server)
		assert.Equal(t, caData(t), cfg.Clusters["lab"].CertificateAuthorityData)
		assert.Equal(t, []byte("default"), cfg.AuthInfos["lab"].ClientCertificateData)
		assert.Empty(t, cfg.AuthInfos["lab"].Token, "the old user is replaced, not merged field by field")
		assert.Equal(t, "https://prod.example:6443", cfg.Clusters["prod"].Server)
		assert.Equal(t, "token of prod", cfg.AuthInfos["prod"].Token)
		assert.Equal(t, "kube-system", cfg.Contexts["lab-admin"].Namespace)
		assert.True(t, cfg.Preferences.Colors)
		assert.Equal(t, os.FileMode(0o600), mode(t, path))
		assert.Equal(t, []string{"config"}, entries(t, filepath.Dir(path)), "no temporary or lock file left")
	})
	t.Run("missing file is created", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), ".kube")
		path := filepath.Join(dir, "config")
		require.NoError(t, kubeconfig.Merge(t.Context(), path, lab(t)))
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		cfg := loadConfig(t, got)
		assert.Equal(t, "lab", cfg.CurrentContext)
		assert.Equal(t, "https://10.0.0.10:6443", cfg.Clusters["lab"].Server)
		assert.Equal(t, os.FileMode(0o600), mode(t, path))
		assert.Equal(t, os.FileMode(0o700), mode(t, dir))
	})
	t.Run("empty current context is set", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config")
		cfg := loadConfig(t, userConfig(t))
		cfg.CurrentContext = ""
		require.NoError(t, os.WriteFile(path, encode(t, cfg), 0o600))
		require.NoError(t, kubeconfig.Merge(t.Context(), path, lab(t)))
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, "lab", loadConfig(t, got).CurrentContext)
	})
	t.Run("empty file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config")
		require.NoError(t, os.WriteFile(path, nil, 0o600))
		require.NoError(t, kubeconfig.Merge(t.Context(), path, lab(t)))
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, "lab", loadConfig(t, got).CurrentContext)
	})
	t.Run("again changes nothing", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config")
		require.NoError(t, os.WriteFile(path, userConfig(t), 0o600))
		require.NoError(t, kubeconfig.Merge(t.Context(), path, lab(t)))
		first, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, kubeconfig.Merge(t.Context(), path, lab(t)))
		second, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, string(first), string(second))
	})
	t.Run("refuses a file that is not a kubeconfig and leaves it", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config")
		require.NoError(t, os.WriteFile(path, []byte("{{{ not yaml"), 0o644))
		err := kubeconfig.Merge(t.Context(), path, lab(t))
		requireCode(t, err, errcode.Invalid)
		assert.Contains(t, err.Error(), "left untouched")
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, "{{{ not yaml", string(got))
		assert.Equal(t, os.FileMode(0o644), mode(t, path))
		assert.Equal(t, []string{"config"}, entries(t, filepath.Dir(path)), "lock released")
	})
	t.Run("refuses data that is not a kubeconfig or has no context", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config")
		requireCode(t, kubeconfig.Merge(t.Context(), path, []byte("{{{")), errcode.Invalid)
		requireCode(t, kubeconfig.Merge(t.Context(), path, []byte("kind: Config\napiVersion: v1\n")), errcode.Invalid)
		assert.NoFileExists(t, path)
	})
	t.Run("through a symbolic link", func(t *testing.T) {
		dir := t.TempDir()
		target := filepath.Join(dir, "dotfiles", "kubeconfig")
		require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o700))
		require.NoError(t, os.WriteFile(target, userConfig(t), 0o600))
		link := filepath.Join(dir, "config")
		require.NoError(t, os.Symlink(target, link))
		require.NoError(t, kubeconfig.Merge(t.Context(), link, lab(t)))
		st, err := os.Lstat(link)
		require.NoError(t, err)
		assert.NotZero(t, st.Mode()&os.ModeSymlink, "the link is kept")
		got, err := os.ReadFile(target)
		require.NoError(t, err)
		assert.Equal(t, "https://10.0.0.10:6443", loadConfig(t, got).Clusters["lab"].Server)
		assert.Equal(t, []string{"config", "dotfiles"}, entries(t, dir), "lock released")
		assert.Equal(t, []string{"kubeconfig"}, entries(t, filepath.Dir(target)))
	})
	t.Run("concurrent merges all land", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config")
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				name := fmt.Sprintf("c%d", i)
				assert.NoError(t, kubeconfig.Merge(t.Context(), path, oneCluster(t, name, "https://10.0.0."+fmt.Sprint(i+1)+":6443")))
			})
		}
		wg.Wait()
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		_, _, contexts := keys(loadConfig(t, got))
		assert.Equal(t, []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"}, contexts)
	})
}

func TestMergeLock(t *testing.T) {
	t.Run("a lock held too long is a conflict", func(t *testing.T) {
		defer kubeconfig.SetLockWait(100 * time.Millisecond)()
		path := filepath.Join(t.TempDir(), "config")
		require.NoError(t, os.WriteFile(path, userConfig(t), 0o600))
		require.NoError(t, os.WriteFile(path+".lock", nil, 0o600))
		err := kubeconfig.Merge(t.Context(), path, lab(t))
		requireCode(t, err, errcode.Conflict)
		assert.Contains(t, err.Error(), path+".lock")
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, string(userConfig(t)), string(got), "unchanged")
		assert.FileExists(t, path+".lock", "someone else's lock is not removed")
		requireCode(t, kubeconfig.Remove(t.Context(), path, "lab"), errcode.Conflict)
	})
	t.Run("waits for a lock to be released", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config")
		require.NoError(t, os.WriteFile(path+".lock", nil, 0o600))
		done := make(chan error, 1)
		go func() { done <- kubeconfig.Merge(t.Context(), path, lab(t)) }()
		// Merge cannot finish while the lock is held.
		select {
		case err := <-done:
			t.Fatalf("Merge returned while the lock was held: %v", err)
		default:
		}
		require.NoError(t, os.Remove(path+".lock"))
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("Merge did not finish after the lock was released")
		}
		assert.FileExists(t, path)
	})
}

func TestRemove(t *testing.T) {
	t.Run("removes exactly the named entries", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config")
		require.NoError(t, os.WriteFile(path, userConfig(t), 0o644))
		require.NoError(t, kubeconfig.Remove(t.Context(), path, "lab"))
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		cfg := loadConfig(t, got)
		clusters, users, contexts := keys(cfg)
		assert.Equal(t, []string{"prod"}, clusters)
		assert.Equal(t, []string{"prod"}, users)
		assert.Equal(t, []string{"lab-admin", "prod"}, contexts, "a context of another name is kept")
		assert.Equal(t, "prod", cfg.CurrentContext)
		assert.True(t, cfg.Preferences.Colors)
		assert.Equal(t, os.FileMode(0o600), mode(t, path))
		assert.Equal(t, []string{"config"}, entries(t, filepath.Dir(path)))
	})
	t.Run("clears the current context when it was name", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config")
		require.NoError(t, kubeconfig.Merge(t.Context(), path, lab(t)))
		require.NoError(t, kubeconfig.Merge(t.Context(), path, oneCluster(t, "prod", "https://prod.example:6443")))
		require.NoError(t, kubeconfig.Remove(t.Context(), path, "lab"))
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		cfg := loadConfig(t, got)
		assert.Empty(t, cfg.CurrentContext)
		_, _, contexts := keys(cfg)
		assert.Equal(t, []string{"prod"}, contexts)
	})
	t.Run("Merge then Remove leaves the rest as it was", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config")
		before := loadConfig(t, oneCluster(t, "prod", "https://prod.example:6443"))
		require.NoError(t, os.WriteFile(path, encode(t, before), 0o600))
		require.NoError(t, kubeconfig.Merge(t.Context(), path, lab(t)))
		require.NoError(t, kubeconfig.Remove(t.Context(), path, "lab"))
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, string(encode(t, before)), string(got))
	})
	t.Run("nothing to remove leaves the file alone", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config")
		// Formatting that a rewrite would change, to see that none happened.
		orig := "# mine\n" + string(oneCluster(t, "prod", "https://prod.example:6443"))
		require.NoError(t, os.WriteFile(path, []byte(orig), 0o644))
		require.NoError(t, kubeconfig.Remove(t.Context(), path, "lab"))
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, orig, string(got))
		assert.Equal(t, os.FileMode(0o644), mode(t, path))
	})
	t.Run("missing file", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), ".kube")
		path := filepath.Join(dir, "config")
		require.NoError(t, kubeconfig.Remove(t.Context(), path, "lab"))
		assert.NoDirExists(t, dir, "nothing created")
	})
	t.Run("refuses", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config")
		requireCode(t, kubeconfig.Remove(t.Context(), path, ""), errcode.Invalid)
		require.NoError(t, os.WriteFile(path, []byte("{{{"), 0o600))
		requireCode(t, kubeconfig.Remove(t.Context(), path, "lab"), errcode.Invalid)
	})
}

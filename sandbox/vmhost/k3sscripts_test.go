package vmhost_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/sandbox/vmhost"
)

// initProgram records its calls and says a unit is active when asked
// about "k3s".
func initProgram(calls *[]string) vmhost.Program {
	return func(_ context.Context, c *vmhost.Call) int {
		*calls = append(*calls, strings.Join(c.Args, " "))
		if strings.Contains(strings.Join(c.Args, " "), "is-active") {
			if c.Args[len(c.Args)-1] == "k3s" {
				c.Stdout.Write([]byte("active\n"))
				return 0
			}
			c.Stdout.Write([]byte("inactive\n"))
			return 3
		}
		return 0
	}
}

// k3sProgram answers --version and kubectl's Ready condition.
func k3sProgram(_ context.Context, c *vmhost.Call) int {
	switch {
	case len(c.Args) > 1 && c.Args[1] == "--version":
		c.Stdout.Write([]byte("k3s version v1.37.2+k3s1 (abcdef12)\n"))
	case len(c.Args) > 1 && c.Args[1] == "kubectl":
		c.Stdout.Write([]byte("True"))
	default:
		return 1
	}
	return 0
}

func runOn(t *testing.T, h *vmhost.Host, script string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	st, err := h.Run(t.Context(), script, nil, &out, &errOut, nil, "root")
	require.NoError(t, err)
	return st, out.String(), errOut.String()
}

// TestK3sScripts runs the K3s provider's node status and uninstall
// scripts on a systemd and an OpenRC host whose init system and k3s are
// stand-ins registered through Options.Programs.
func TestK3sScripts(t *testing.T) {
	for _, init := range []string{vmhost.InitSystemd, vmhost.InitOpenRC} {
		t.Run(init, func(t *testing.T) {
			var calls []string
			programs := map[string]vmhost.Program{"k3s": k3sProgram}
			unit := "/etc/systemd/system/k3s.service"
			if init == vmhost.InitSystemd {
				programs["/usr/bin/systemctl"] = initProgram(&calls)
			} else {
				programs["/sbin/rc-service"] = initProgram(&calls)
				programs["/sbin/rc-update"] = initProgram(&calls)
				unit = "/etc/init.d/k3s"
			}
			h, err := vmhost.New(filepath.Join(t.TempDir(), "root"), vmhost.Options{Init: init, Programs: programs})
			require.NoError(t, err)
			defer h.Close()
			st, _, stderr := runOn(t, h, `set -e
mkdir -p /etc/rancher/k3s /etc/rancher/node /var/lib/rancher/k3s/server /etc/openctl-agent
echo unit > `+unit+`
echo k3s > /usr/local/bin/k3s && chmod 0755 /usr/local/bin/k3s
ln -s k3s /usr/local/bin/kubectl && ln -s /usr/local/bin/k3s /usr/local/bin/crictl && ln -s /usr/bin/cat /usr/local/bin/ctr
echo T > /var/lib/rancher/k3s/server/token && echo A > /var/lib/rancher/k3s/server/agent-token
echo 'apiVersion: v1' > /etc/rancher/k3s/k3s.yaml
echo pw > /etc/rancher/node/password`)
			require.Equal(t, 0, st, stderr)

			st, stdout, stderr := runOn(t, h, "set -- k3s cp-0 whole\n"+k3sScript(t, "nodeStatusScript"))
			assert.Equal(t, 0, st)
			assert.Empty(t, stderr)
			want := "installed=1\nstate=active\nversion=v1.37.2+k3s1\nready=True\n" +
				"--- /var/lib/rancher/k3s/server/token\nT\n\n--- /var/lib/rancher/k3s/server/agent-token\nA\n\n--- /etc/rancher/k3s/k3s.yaml\napiVersion: v1\n\n"
			assert.Equal(t, want, stdout)
			// The lighter reads a wait polls with.
			for read, want := range map[string]string{"poll": "installed=1\nstate=active\nready=True\n", "service": "installed=1\nstate=active\n"} {
				st, stdout, stderr = runOn(t, h, "set -- k3s cp-0 "+read+"\n"+k3sScript(t, "nodeStatusScript"))
				assert.Equal(t, 0, st, read)
				assert.Empty(t, stderr, read)
				assert.Equal(t, want, stdout, read)
			}

			st, stdout, stderr = runOn(t, h, "set -- k3s\n"+k3sScript(t, "uninstallScript"))
			assert.Equal(t, 0, st)
			assert.Empty(t, stdout)
			assert.Empty(t, stderr)
			for _, gone := range []string{unit, "usr/local/bin/k3s", "usr/local/bin/kubectl", "usr/local/bin/crictl", "etc/rancher/k3s", "var/lib/rancher/k3s", "etc/openctl-agent"} {
				_, err := os.Lstat(filepath.Join(h.Dir(), gone))
				assert.True(t, os.IsNotExist(err), "%s removed", gone)
			}
			for _, kept := range []string{"etc/rancher/node/password", "usr/local/bin/ctr"} {
				_, err := os.Lstat(filepath.Join(h.Dir(), kept))
				assert.NoError(t, err, "%s kept", kept)
			}
			if init == vmhost.InitSystemd {
				assert.Contains(t, calls, "systemctl disable --now k3s")
				assert.Contains(t, calls, "systemctl daemon-reload")
			} else {
				assert.Contains(t, calls, "rc-service k3s stop")
				assert.Contains(t, calls, "rc-update del openctl-agent default")
			}
		})
	}
}

// TestInstallScript runs the provider's install-script path with a curl
// stand-in that "downloads" an installer recording what it was given.
func TestInstallScript(t *testing.T) {
	installer := `#!/bin/sh
set -e
echo "version=$INSTALL_K3S_VERSION skip=$INSTALL_K3S_SKIP_START token=$K3S_TOKEN args=$*" > /root/installer.log
`
	curl := func(_ context.Context, c *vmhost.Call) int {
		for i, a := range c.Args {
			if a == "-o" && i+1 < len(c.Args) {
				f, err := c.Open(c.Args[i+1], os.O_WRONLY|os.O_TRUNC, 0)
				if err != nil {
					return c.Errorf(23, "%v", err)
				}
				defer f.Close()
				f.Write([]byte(installer))
				return 0
			}
		}
		return 2
	}
	script := "set -- https://get.k3s.io /run/vars.env v1.37.2+k3s1 HASH server --node-name=cp-0\n" + k3sScript(t, "installScriptRun")
	for _, withCurl := range []bool{false, true} {
		programs := map[string]vmhost.Program{}
		if withCurl {
			programs["/usr/bin/curl"] = curl
		}
		h, err := vmhost.New(filepath.Join(t.TempDir(), "root"), vmhost.Options{Init: vmhost.InitSystemd, Programs: programs})
		require.NoError(t, err)
		t.Cleanup(func() { _ = h.Close() })
		require.NoError(t, os.WriteFile(filepath.Join(h.Dir(), "run/vars.env"), []byte("K3S_TOKEN='tok'\n"), 0o600))
		st, stdout, stderr := runOn(t, h, script)
		leftovers, err := filepath.Glob(filepath.Join(h.Dir(), "tmp/tmp.*"))
		require.NoError(t, err)
		assert.Empty(t, leftovers, "the downloaded script is removed")
		_, err = os.Stat(filepath.Join(h.Dir(), "run/vars.env"))
		assert.True(t, os.IsNotExist(err), "the variables file is removed at once")
		if !withCurl {
			assert.Equal(t, 1, st)
			assert.Equal(t, "neither curl nor wget is installed to fetch https://get.k3s.io\n", stderr)
			continue
		}
		require.Equal(t, 0, st, stderr)
		assert.Empty(t, stdout)
		log, err := os.ReadFile(filepath.Join(h.Dir(), "root/installer.log"))
		require.NoError(t, err)
		assert.Equal(t, "version=v1.37.2+k3s1 skip=true token=tok args=server --node-name=cp-0\n", string(log))
		rec, err := os.ReadFile(filepath.Join(h.Dir(), "etc/rancher/k3s/openctl-install.sha256"))
		require.NoError(t, err)
		assert.Equal(t, "HASH\n", string(rec))
	}
}

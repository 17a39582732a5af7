package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/openctl/openctl/backoff"
	"github.com/openctl/openctl/proxmox/proxmoxtest"
	"github.com/openctl/openctl/state/postgres/pgtest"
)

// TestMain makes the test binary the openctl command of the scripts
// (testscript.Main installs it on $PATH as "openctl") and of the tests
// that re-execute it with OPENCTL_TEST_MAIN=1, and stops the PostgreSQL
// server pgtest starts.
func TestMain(m *testing.M) {
	if os.Getenv("OPENCTL_TEST_MAIN") == "1" {
		main()
	}
	testscript.Main(pgMain{m}, map[string]func(){"openctl": main})
}

// pgMain runs the tests under pgtest.Main, which stops the PostgreSQL
// server at the end and exits without returning. Because of that exit,
// testscript.Main would not remove its directory holding a copy of the test
// binary for $PATH: pgMain replaces that directory with one next to the
// test binary (which "go test" removes) holding a symbolic link.
type pgMain struct{ m *testing.M }

func (p pgMain) Run() int {
	relinkScriptBin()
	pgtest.Main(p.m)
	return 0 // not reached
}

// relinkScriptBin moves the scripts' openctl command from testscript's
// temporary directory (the first element of $PATH) to a symbolic link in
// a directory beside the test binary, and removes testscript's directory.
// If anything is not as expected it leaves everything as it is.
func relinkScriptBin() {
	path := filepath.SplitList(os.Getenv("PATH"))
	exe, err := os.Executable()
	if len(path) == 0 || err != nil {
		return
	}
	tsBin := path[0]
	tsDir := filepath.Dir(tsBin)
	if filepath.Base(tsBin) != "bin" || !strings.HasPrefix(filepath.Base(tsDir), "testscript-main") {
		return
	}
	bin := filepath.Join(filepath.Dir(exe), fmt.Sprintf("openctl-script-bin-%d", os.Getpid()))
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return
	}
	if err := os.Symlink(exe, filepath.Join(bin, "openctl")); err != nil {
		return
	}
	path[0] = bin
	os.Setenv("PATH", strings.Join(path, string(filepath.ListSeparator)))
	_ = os.RemoveAll(tsDir)
}

// scriptPassphrase is the state passphrase of the scripts.
const scriptPassphrase = "correct horse battery staple"

func scriptParams(t *testing.T, dir string) testscript.Params {
	return testscript.Params{
		Dir: dir,
		Setup: func(env *testscript.Env) error {
			env.Setenv("OPENCTL_HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("OPENCTL_STATE_PASSPHRASE", scriptPassphrase)
			// A race-enabled binary sleeps a second at exit unless told not to.
			env.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
			env.Setenv("NO_COLOR", "1")
			return nil
		},
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"sandbox-start": cmdSandboxStart,
			"sandbox-wait":  cmdSandboxWait,
			"sandbox-vms":   cmdSandboxVMs,
			"sandbox-setvm": cmdSandboxSetVM,
			"exits":         cmdExits,
		},
		RequireExplicitExec: false,
	}
}

// TestScripts runs the CLI scenarios of testdata/script against the
// Proxmox VE simulator.
func TestScripts(t *testing.T) {
	testscript.Run(t, scriptParams(t, "testdata/script"))
}

// TestScriptsPostgres runs the scenarios of testdata/script-pg, which get
// a fresh PostgreSQL database in $PGDSN.
func TestScriptsPostgres(t *testing.T) {
	dsn := pgtest.Start(t)
	p := scriptParams(t, "testdata/script-pg")
	setup := p.Setup
	p.Setup = func(env *testscript.Env) error {
		env.Setenv("PGDSN", dsn)
		return setup(env)
	}
	testscript.Run(t, p)
}

// servers holds each script's simulator.
var servers sync.Map // *testscript.TestScript → *proxmoxtest.Server

func server(ts *testscript.TestScript) *proxmoxtest.Server {
	v, ok := servers.Load(ts)
	if !ok {
		ts.Fatalf("no simulator: run sandbox-start first")
	}
	return v.(*proxmoxtest.Server)
}

// cmdSandboxStart starts a Proxmox VE simulator in the test process — the
// sandbox's layout: nodes pve1..pve3, the template on shared storage —
// and points the script's openctl at it through the environment.
//
//	sandbox-start [-speed N]   (default 20: every latency divided by 20)
func cmdSandboxStart(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! sandbox-start")
	}
	fs := flag.NewFlagSet("sandbox-start", flag.ContinueOnError)
	speed := fs.Float64("speed", 20, "latency divisor")
	ts.Check(fs.Parse(args))
	srv, err := proxmoxtest.New(append(proxmoxtest.SandboxLayout(3, proxmoxtest.DefaultSharedStorage), proxmoxtest.WithSpeed(*speed))...)
	ts.Check(err)
	ts.Check(srv.Start("127.0.0.1:0"))
	ts.Defer(srv.Close)
	servers.Store(ts, srv)
	ts.Defer(func() { servers.Delete(ts) })
	id, secret := srv.Token()
	ts.Setenv("OPENCTL_PROXMOX_URL", srv.URL())
	ts.Setenv("OPENCTL_PROXMOX_TOKEN_ID", id)
	ts.Setenv("OPENCTL_PROXMOX_TOKEN_SECRET", secret)
	ts.Setenv("OPENCTL_PROXMOX_FINGERPRINT", srv.Fingerprint())
}

// cmdSandboxWait waits until the simulator has served a route at least n
// times, polling for up to 30 seconds: the way a script knows that a
// background openctl is in the middle of its work.
//
//	sandbox-wait 'POST /nodes/{node}/qemu/{vmid}/clone' 1
func cmdSandboxWait(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: sandbox-wait ROUTE N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	srv := server(ts)
	if !poll(func() bool { return srv.RequestCount(args[0]) >= n }) {
		ts.Fatalf("route %q served %d times after 30s, want %d", args[0], srv.RequestCount(args[0]), n)
	}
}

// poll reports whether cond became true within 30 seconds, checking it
// with backoff.
func poll(cond func() bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := backoff.Policy{Initial: 5 * time.Millisecond, Max: 200 * time.Millisecond}.Start()
	for !cond() {
		if b.Wait(ctx) != nil {
			return cond()
		}
	}
	return true
}

// cmdSandboxVMs checks the number of VMs (not templates) in the simulator,
// whatever their names: duplicates count.
//
//	sandbox-vms 3
func cmdSandboxVMs(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sandbox-vms N")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	names, err := simulatorVMs(server(ts))
	ts.Check(err)
	if len(names) != want {
		ts.Fatalf("the simulator has %d VMs %v, want %d", len(names), names, want)
	}
}

// simulatorVMs lists the names of the simulator's VMs (not templates),
// through its API.
func simulatorVMs(srv *proxmoxtest.Server) ([]string, error) {
	vms, err := simulatorVMList(srv)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(vms))
	for _, v := range vms {
		names = append(names, v.Name)
	}
	return names, nil
}

// cmdSandboxSetVM changes a VM's configuration behind openctl's back,
// through the simulator's API (PUT /nodes/{node}/qemu/{vmid}/config), as
// someone using the Proxmox web UI would: drift.
//
//	sandbox-setvm web-01 memory=4096
func cmdSandboxSetVM(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: sandbox-setvm NAME KEY=VALUE...")
	}
	srv := server(ts)
	vms, err := simulatorVMList(srv)
	ts.Check(err)
	form := url.Values{}
	for _, kv := range args[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			ts.Fatalf("want KEY=VALUE, got %q", kv)
		}
		form.Set(k, v)
	}
	for _, vm := range vms {
		if vm.Name != args[0] {
			continue
		}
		req, err := http.NewRequest(http.MethodPut, fmt.Sprintf("%s/nodes/%s/qemu/%d/config", srv.URL(), vm.Node, vm.VMID), strings.NewReader(form.Encode()))
		ts.Check(err)
		id, secret := srv.Token()
		req.Header.Set("Authorization", "PVEAPIToken="+id+"="+secret)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := srv.Client().Do(req)
		ts.Check(err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			ts.Fatalf("PUT config of %s: %s", args[0], resp.Status)
		}
		return
	}
	ts.Fatalf("no VM %s in the simulator", args[0])
}

// simVM is a VM of the simulator's resource list.
type simVM struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Node     string `json:"node"`
	VMID     int    `json:"vmid"`
	Template int    `json:"template"`
}

// simulatorVMList lists the simulator's VMs (not templates) through its API.
func simulatorVMList(srv *proxmoxtest.Server) ([]simVM, error) {
	req, err := http.NewRequest(http.MethodGet, srv.URL()+"/cluster/resources?type=vm", nil)
	if err != nil {
		return nil, err
	}
	id, secret := srv.Token()
	req.Header.Set("Authorization", "PVEAPIToken="+id+"="+secret)
	resp, err := srv.Client().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Data []simVM `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	var out []simVM
	for _, r := range body.Data {
		if r.Type == "qemu" && r.Template == 0 {
			out = append(out, r)
		}
	}
	return out, nil
}

// cmdExits runs a command and checks its exit code; stdout and stderr are
// then available to the stdout and stderr commands, as after exec.
//
//	exits 2 openctl plan --detailed-exitcode -f vms.yaml
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE COMMAND [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("%v", err)
	}
	if got != want {
		ts.Fatalf("exit code %d, want %d", got, want)
	}
}

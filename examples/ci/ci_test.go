// Package ci_test checks the CI example: the GitHub Actions workflow
// openctl.yml calls openctl-ci.sh the way the script expects, and the
// script plans, renders, applies exactly the saved plan and re-plans with
// no changes against `openctl sandbox`, end to end, with the openctl built
// from this repository.
package ci_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/openctl/openctl/output"
)

// openctlBin is the openctl built for the tests, "" if it could not be.
var openctlBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "openctl-ci-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	bin := filepath.Join(dir, "openctl")
	if out, err := exec.Command(goCmd, "build", "-o", bin, "github.com/openctl/openctl/cmd/openctl").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "ci_test: building openctl: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	openctlBin = bin
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// workflow is the part of a GitHub Actions workflow the test reads.
type workflow struct {
	On   map[string]any    `yaml:"on"`
	Env  map[string]string `yaml:"env"`
	Jobs map[string]struct {
		If    string `yaml:"if"`
		Steps []struct {
			Name string            `yaml:"name"`
			ID   string            `yaml:"id"`
			If   string            `yaml:"if"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			With map[string]any    `yaml:"with"`
			Env  map[string]string `yaml:"env"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

func TestWorkflow(t *testing.T) {
	b, err := os.ReadFile("openctl.yml")
	require.NoError(t, err)
	var w workflow
	dec := yaml.NewDecoder(bytes.NewReader(b))
	require.NoError(t, dec.Decode(&w))

	assert.Contains(t, w.On, "pull_request")
	assert.Contains(t, w.On, "push")
	_, err = os.Stat(filepath.Join("..", "..", w.Env["OPENCTL_CI_SCRIPT"]))
	require.NoError(t, err, "OPENCTL_CI_SCRIPT names the script, from the repository root")
	assert.Equal(t, "openctl-plan", w.Env["OPENCTL_CI_OUT"])
	for _, v := range []string{"OPENCTL_PROXMOX_TOKEN_SECRET", "OPENCTL_STATE_PASSPHRASE", "OPENCTL_STATE_DSN"} {
		assert.Equal(t, "${{ secrets."+v+" }}", w.Env[v], "%s comes from the repository's secrets", v)
	}

	runs := func(job string) string {
		var all []string
		for _, s := range w.Jobs[job].Steps {
			all = append(all, s.Run)
		}
		return strings.Join(all, "\n")
	}
	plan, apply := w.Jobs["plan"], w.Jobs["apply"]
	require.NotEmpty(t, plan.Steps)
	require.NotEmpty(t, apply.Steps)
	assert.Contains(t, plan.If, "!= 'push'")
	assert.Contains(t, apply.If, "== 'push'")
	for _, sub := range []string{"sandbox-up", "plan", "apply", "sandbox-down"} {
		assert.Contains(t, runs("plan"), `sh "$OPENCTL_CI_SCRIPT" `+sub)
	}
	assert.Contains(t, runs("plan"), "--body-file \"$OPENCTL_CI_OUT/comment.md\"")
	assert.Contains(t, runs("apply"), `sh "$OPENCTL_CI_SCRIPT" apply`)
	assert.NotContains(t, runs("apply"), `"$OPENCTL_CI_SCRIPT" plan`, "after the merge only the reviewed plan is applied")

	var uploaded, downloaded bool
	for _, s := range plan.Steps {
		if strings.HasPrefix(s.Uses, "actions/upload-artifact@") {
			uploaded = s.With["name"] == "openctl-plan" && s.With["path"] == "${{ env.OPENCTL_CI_OUT }}/"
		}
	}
	for _, s := range apply.Steps {
		if strings.Contains(s.Run, "gh run download") {
			downloaded = strings.Contains(s.Run, "--name openctl-plan --dir \"$OPENCTL_CI_OUT\"")
		}
	}
	assert.True(t, uploaded, "the plan job uploads $OPENCTL_CI_OUT as artifact openctl-plan")
	assert.True(t, downloaded, "the apply job downloads artifact openctl-plan into $OPENCTL_CI_OUT")
}

// ciEnv is a run of the script in a directory of its own.
type ciEnv struct {
	t                     *testing.T
	dir, out, sandbox     string
	ghOutput, stepSummary string
	manifests             string
}

func newCIEnv(t *testing.T) *ciEnv {
	dir := t.TempDir()
	manifests, err := filepath.Abs(filepath.Join("..", "vms.yaml"))
	require.NoError(t, err)
	e := &ciEnv{t: t, dir: dir, out: filepath.Join(dir, "openctl-plan"), sandbox: filepath.Join(dir, "sandbox"),
		ghOutput: filepath.Join(dir, "github-output"), stepSummary: filepath.Join(dir, "step-summary"), manifests: manifests}
	t.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(e.sandbox, "pid")); err == nil {
			var pid int
			if _, err := fmt.Sscan(string(b), &pid); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return e
}

func (e *ciEnv) environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENCTL_") && !strings.HasPrefix(kv, "GITHUB_") {
			env = append(env, kv)
		}
	}
	return append(env,
		"HOME="+e.dir, "NO_COLOR=1",
		"GORACE=atexit_sleep_ms=0",
		"OPENCTL="+openctlBin,
		"OPENCTL_CI_MANIFESTS="+e.manifests,
		"OPENCTL_CI_OUT="+e.out,
		"OPENCTL_CI_SANDBOX_DIR="+e.sandbox,
		"OPENCTL_CI_SANDBOX_ARGS=--speed 20",
		"GITHUB_OUTPUT="+e.ghOutput,
		"GITHUB_STEP_SUMMARY="+e.stepSummary,
	)
}

// run runs sh openctl-ci.sh args... in e.dir and returns its exit code,
// stdout and stderr.
func (e *ciEnv) run(args ...string) (int, string, string) {
	e.t.Helper()
	script, err := filepath.Abs("openctl-ci.sh")
	require.NoError(e.t, err)
	// Not t.Context(): cleanups run sandbox-down after it is cancelled.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", append([]string{script}, args...)...)
	cmd.Dir = e.dir
	cmd.Env = e.environ()
	cmd.WaitDelay = 5 * time.Second // the sandbox keeps no pipe of ours open, but do not hang if it did
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(e.t, err)
	}
	return code, stdout.String(), stderr.String()
}

func (e *ciEnv) mustRun(args ...string) string {
	e.t.Helper()
	code, stdout, stderr := e.run(args...)
	require.Equal(e.t, 0, code, "openctl-ci.sh %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), stdout, stderr)
	return stdout
}

func (e *ciEnv) read(name string) string {
	e.t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(e.t, err)
	return string(b)
}

func TestScriptUsage(t *testing.T) {
	e := newCIEnv(t)
	code, _, stderr := e.run()
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "usage: openctl-ci.sh sandbox-up | plan | apply | sandbox-down")
	code, _, stderr = e.run("apply")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "no saved plan")
	code, _, stderr = e.run("sandbox-down")
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr, "no sandbox running")
}

// TestScriptSandbox runs the script's sandbox against the plan command
// as it is on every branch: sandbox-up writes an environment that points
// openctl at the simulator, sandbox-down stops it.
func TestScriptSandbox(t *testing.T) {
	e := newCIEnv(t)
	e.mustRun("sandbox-up")
	code, _, stderr := e.run("sandbox-up")
	assert.Equal(t, 1, code, "a second sandbox-up refuses")
	assert.Contains(t, stderr, "already running")

	env := e.read(filepath.Join(e.sandbox, "env.sh"))
	assert.Contains(t, env, "export OPENCTL_PROXMOX_URL='https://127.0.0.1:")
	cmd := exec.CommandContext(t.Context(), "sh", "-c", `. "$1" && "$OPENCTL" plan -f "$OPENCTL_CI_MANIFESTS" -o markdown`, "sh", filepath.Join(e.sandbox, "env.sh"))
	cmd.Env = e.environ()
	out, err := cmd.Output()
	require.NoError(t, err)
	assert.Contains(t, string(out), "**Plan: 3 to create, 0 to update, 0 to replace, 0 to delete, 0 unchanged.**")

	pid := strings.TrimSpace(e.read(filepath.Join(e.sandbox, "pid")))
	e.mustRun("sandbox-down")
	var n int
	_, err = fmt.Sscan(pid, &n)
	require.NoError(t, err)
	assert.Error(t, syscall.Kill(n, 0), "the sandbox process is gone")
	assert.NoFileExists(t, filepath.Join(e.sandbox, "env.sh"))
}

// TestScriptEndToEnd is the review workflow against `openctl sandbox`:
// plan saves a plan and renders it, apply applies that exact file, a
// second plan has nothing to do, and the first plan, now stale, is
// refused. It needs saved plans (plan --out, show, apply FILE).
func TestScriptEndToEnd(t *testing.T) {
	help, err := exec.CommandContext(t.Context(), openctlBin, "plan", "--help").CombinedOutput()
	require.NoError(t, err, "%s", help)
	if !regexp.MustCompile(`--out\b`).Match(help) {
		t.Skip("openctl plan --help lists no --out: this openctl has no saved plans (plan --out, show FILE, apply FILE) yet")
	}
	e := newCIEnv(t)
	e.mustRun("sandbox-up")
	t.Cleanup(func() { e.run("sandbox-down") })

	stdout := e.mustRun("plan")
	assert.Contains(t, stdout, "Plan: 3 to create")
	assert.Equal(t, "true\n", e.read(filepath.Join(e.out, "changes")))
	ghOut := e.read(e.ghOutput)
	assert.Contains(t, ghOut, "changes=true\n")
	assert.Contains(t, ghOut, "markdown="+filepath.Join(e.out, "plan.md")+"\n")
	md := e.read(filepath.Join(e.out, "plan.md"))
	assert.Contains(t, md, "### openctl plan\n")
	assert.Contains(t, md, "**Plan: 3 to create, 0 to update, 0 to replace, 0 to delete, 0 unchanged.**")
	assert.Contains(t, md, "| ➕ create | `vm/web-01` |")
	assert.Equal(t, "<!-- openctl-plan -->\n"+md, e.read(filepath.Join(e.out, "comment.md")))
	assert.Equal(t, md, e.read(e.stepSummary))

	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(e.read(filepath.Join(e.out, "plan.json"))))
	require.NoError(t, err)
	schema, err := jsonschema.UnmarshalJSON(bytes.NewReader(output.PlanReportSchema()))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource(output.PlanReportSchemaID, schema))
	sch, err := c.Compile(output.PlanReportSchemaID)
	require.NoError(t, err)
	require.NoError(t, sch.Validate(doc))

	planFile := filepath.Join(e.out, "plan.openctl")
	st, err := os.Stat(planFile)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "a saved plan is private")
	reviewed, err := os.ReadFile(planFile)
	require.NoError(t, err)
	assert.NotContains(t, string(reviewed), "openctl sandbox dry run", "the state passphrase is never in the plan")

	// After the merge: apply exactly the reviewed file.
	e.mustRun("apply")

	// Converged: a new plan has nothing to do.
	stale := filepath.Join(e.dir, "reviewed.openctl")
	require.NoError(t, os.WriteFile(stale, reviewed, 0o600))
	e.mustRun("plan")
	assert.Equal(t, "false\n", e.read(filepath.Join(e.out, "changes")))
	assert.Contains(t, e.read(e.ghOutput), "changes=false\n")
	assert.Contains(t, e.read(filepath.Join(e.out, "plan.md")), "**No changes:**")

	// The reviewed plan is stale now: the state moved. Applying it again
	// is refused.
	require.NoError(t, os.WriteFile(planFile, reviewed, 0o600))
	code, stdout, stderr := e.run("apply")
	assert.NotEqual(t, 0, code, "a stale plan is refused\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
}

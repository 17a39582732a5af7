package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/openctl/openctl/cli"
)

// TestMain makes the test binary the custom CLI of the scripts.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"custom": func() { cli.Main(options()) }})
}

// TestScripts runs testdata/script: the team's File kind through every
// command of the CLI, with no Proxmox configured.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "script"),
		Setup: func(env *testscript.Env) error {
			env.Setenv("OPENCTL_HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("NO_COLOR", "1")
			env.Setenv("GORACE", os.Getenv("GORACE")+" atexit_sleep_ms=0")
			return nil
		},
	})
}

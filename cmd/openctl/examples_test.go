package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openctl/openctl/cli"
)

// Every example manifest is valid for the reference CLI.
func TestExampleManifestsValidate(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Setenv("OPENCTL_HOME", t.TempDir())
			var stdout, stderr bytes.Buffer
			code := cli.Run(t.Context(), options(), []string{"validate", "-f", f}, strings.NewReader(""), &stdout, &stderr)
			require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
			assert.Contains(t, stdout.String(), "valid")
		})
	}
}

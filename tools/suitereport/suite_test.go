package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const raceJSON = `{"Action":"start","Package":"example.com/a"}
{"Action":"run","Package":"example.com/a","Test":"TestFast"}
{"Action":"output","Package":"example.com/a","Test":"TestFast","Output":"=== RUN   TestFast\n"}
{"Action":"pass","Package":"example.com/a","Test":"TestFast","Elapsed":0.2}
{"Action":"pass","Package":"example.com/a","Test":"TestSlow/one","Elapsed":30}
{"Action":"pass","Package":"example.com/a","Test":"TestSlow","Elapsed":31}
{"Action":"pass","Package":"example.com/a","Elapsed":31.5}
# a build error's text is not JSON
{"Action":"skip","Package":"example.com/b","Test":"TestNeedsRoot","Elapsed":0}
{"Action":"fail","Package":"example.com/b","Test":"TestBroken","Elapsed":4}
{"Action":"fail","Package":"example.com/b","Elapsed":4.5}
{"Action":"skip","Package":"example.com/c","Elapsed":0}
`

const standinJSON = `{"Action":"pass","Package":"example.com/standin","Test":"TestStandin","Elapsed":90}
{"Action":"pass","Package":"example.com/standin","Elapsed":95}
`

func writeDir(t *testing.T, steps string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "steps.tsv"), []byte(steps), 0o600))
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
	}
	return dir
}

func TestReport(t *testing.T) {
	// standin-test and test-race ran at once.
	dir := writeDir(t, "vet\t0.5\t12.25\tok\nstandin-test\t12.8\t100\tok\ntest-race\t12.8\t140\tFAIL\n",
		map[string]string{"test-race.json": raceJSON, "standin-test.json": standinJSON})
	s, err := load(dir)
	require.NoError(t, err)
	var out bytes.Buffer
	s.print(&out)
	got := out.String()

	assert.Contains(t, got, "  vet                +0.5s     12.2s  ok\n")
	assert.Contains(t, got, "  test-race         +12.8s    140.0s  FAIL\n")
	assert.Contains(t, got, "  total                       152.8s\n", "from the first start to the last end")
	// Packages slowest first, across steps; one without tests is left out.
	i, j, k := strings.Index(got, "example.com/standin"), strings.Index(got, "     31.5s  ok    test-race  example.com/a"), strings.Index(got, "      4.5s  FAIL  test-race  example.com/b")
	assert.True(t, i >= 0 && j > i && k > j, "packages by time:\n%s", got)
	assert.NotContains(t, got, "example.com/c")
	// Top-level tests only, slowest first.
	slow := got[strings.Index(got, "== the ten slowest tests =="):]
	assert.Less(t, strings.Index(slow, "TestStandin"), strings.Index(slow, "TestSlow"))
	assert.NotContains(t, slow, "TestSlow/one")
	assert.Contains(t, got, "failed steps: test-race\n")
	assert.True(t, strings.HasSuffix(got, "\nsuite: 4 passed, 1 failed, 1 skipped\n"), got)
	assert.False(t, s.ok())
}

func TestReportAllPassed(t *testing.T) {
	s, err := load(writeDir(t, "standin-test\t0\t100\tok\n", map[string]string{"standin-test.json": standinJSON}))
	require.NoError(t, err)
	assert.True(t, s.ok())
	var out bytes.Buffer
	s.print(&out)
	assert.NotContains(t, out.String(), "failed steps")
}

func TestReportBadSteps(t *testing.T) {
	for _, steps := range []string{"vet 0 12 ok\n", "vet\t12\tok\n", "vet\t0\tsoon\tok\n", "vet\t0\t-1\tok\n", "vet\tInf\t1\tok\n", "vet\t0\tNaN\tok\n"} {
		_, err := load(writeDir(t, steps, nil))
		assert.ErrorContains(t, err, "steps.tsv: line 1", "%q", steps)
	}
	_, err := load(writeDir(t, "vet\tInf\t1\tok\n", nil))
	assert.ErrorContains(t, err, `line 1: START "Inf"`, "the error names the field")
	_, err = load(writeDir(t, "vet\t0\tsoon\tok\n", nil))
	assert.ErrorContains(t, err, `line 1: SECONDS "soon"`)
	_, err = load(t.TempDir())
	assert.Error(t, err, "no steps.tsv")
}

func FuzzRead(f *testing.F) {
	f.Add("vet\t0\t1\tok\n", raceJSON)
	f.Add("a\tb\tc\td\n\n", standinJSON)
	f.Fuzz(func(t *testing.T, steps, events string) {
		s := &suite{}
		if s.readSteps(steps) != nil {
			return
		}
		require.NoError(t, s.readEvents("x", strings.NewReader(events)))
		s.print(&bytes.Buffer{})
		assert.LessOrEqual(t, len(s.slowest(10)), 10)
	})
}

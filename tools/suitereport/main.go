// Command suitereport prints the timing table that ends `make test`: the
// wall time of every step of the suite, of every test package (and
// nested module) the steps ran, and the ten slowest tests, then one
// closing line with the counts of tests passed, failed and skipped.
//
//	suitereport DIR
//
// DIR holds what the Makefile's steps left there: steps.tsv, one line
// per step run ("NAME<TAB>START<TAB>SECONDS<TAB>ok|FAIL", START counted
// from the suite's start: steps may run at once), and one `go test -json`
// event stream per step that ran tests (gotestsum's --jsonfile), named
// STEP.json. It exits 1 when a step failed or a test failed.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: suitereport DIR")
		os.Exit(2)
	}
	s, err := load(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "suitereport:", err)
		os.Exit(2)
	}
	s.print(os.Stdout)
	if !s.ok() {
		os.Exit(1)
	}
}

// load reads DIR's steps.tsv and every STEP.json it names.
func load(dir string) (*suite, error) {
	b, err := os.ReadFile(filepath.Join(dir, "steps.tsv"))
	if err != nil {
		return nil, err
	}
	s := &suite{}
	if err := s.readSteps(string(b)); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "steps.tsv"), err)
	}
	for _, st := range s.steps {
		f, err := os.Open(filepath.Join(dir, st.name+".json"))
		if os.IsNotExist(err) {
			continue // a step that runs no tests
		}
		if err != nil {
			return nil, err
		}
		err = s.readEvents(st.name, f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name(), err)
		}
	}
	return s, nil
}

// print writes the tables and the closing line.
func (s *suite) print(w io.Writer) {
	var total float64
	fmt.Fprintf(w, "\n== make test: wall time per step (started at, took) ==\n")
	for _, st := range s.steps {
		fmt.Fprintf(w, "  %-14s %9s %9s  %s\n", st.name, "+"+seconds(st.start), seconds(st.secs), st.result)
		total = max(total, st.start+st.secs)
	}
	fmt.Fprintf(w, "  %-14s %9s %9s\n", "total", "", seconds(total))

	if pkgs := s.byTime(); len(pkgs) > 0 {
		fmt.Fprintf(w, "\n== test packages: wall time of each test binary (several run at once) ==\n")
		for _, p := range pkgs {
			fmt.Fprintf(w, "  %9s  %-4s  %-10s %s\n", seconds(p.secs), p.result, p.step, p.name)
		}
	}
	if slow := s.slowest(10); len(slow) > 0 {
		fmt.Fprintf(w, "\n== the ten slowest tests ==\n")
		for _, t := range slow {
			fmt.Fprintf(w, "  %9s  %s %s\n", seconds(t.secs), t.pkg, t.name)
		}
	}
	var failed []string
	for _, st := range s.steps {
		if st.result != "ok" {
			failed = append(failed, st.name)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "\nfailed steps: %s\n", strings.Join(failed, ", "))
	}
	fmt.Fprintf(w, "\nsuite: %d passed, %d failed, %d skipped\n", s.passed, s.failed, s.skipped)
}

// seconds formats a duration in seconds as "812.3s".
func seconds(s float64) string { return fmt.Sprintf("%.1fs", s) }

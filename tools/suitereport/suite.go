package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// suite is what the steps of one `make test` run recorded.
type suite struct {
	steps []step
	pkgs  []pkg
	tests []test // top-level tests that ended (pass, fail or skip)

	passed, failed, skipped int // every test and subtest
}

// step is one line of steps.tsv.
type step struct {
	name   string
	start  float64 // seconds after the suite started
	secs   float64
	result string // "ok" or "FAIL"
}

// pkg is one test binary's run: a package of a step's module.
type pkg struct {
	step, name string
	secs       float64
	result     string // "ok", "FAIL" or "skip" (no test files)
}

// test is one top-level test's run.
type test struct {
	pkg, name string
	secs      float64
}

// event is the part of a test2json event the report reads.
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
}

// readSteps parses steps.tsv.
func (s *suite) readSteps(text string) error {
	for i, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			return fmt.Errorf("line %d: want NAME<TAB>START<TAB>SECONDS<TAB>RESULT, got %q", i+1, line)
		}
		var n [2]float64
		for j, v := range f[1:3] {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || !(x >= 0) || math.IsInf(x, 0) { // NaN too
				return fmt.Errorf("line %d: %s %q is not a number of seconds", i+1, [2]string{"START", "SECONDS"}[j], v)
			}
			n[j] = x
		}
		s.steps = append(s.steps, step{name: f[0], start: n[0], secs: n[1], result: f[3]})
	}
	return nil
}

// readEvents reads one step's `go test -json` stream. Lines that are not
// JSON (a build failure's text) are ignored: the step's result says it
// failed.
func (s *suite) readEvents(stepName string, r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		switch e.Action {
		case "pass", "fail", "skip":
		default:
			continue
		}
		if e.Test == "" {
			result := map[string]string{"pass": "ok", "fail": "FAIL", "skip": "skip"}[e.Action]
			s.pkgs = append(s.pkgs, pkg{step: stepName, name: e.Package, secs: e.Elapsed, result: result})
			continue
		}
		switch e.Action {
		case "pass":
			s.passed++
		case "fail":
			s.failed++
		case "skip":
			s.skipped++
		}
		if !strings.Contains(e.Test, "/") {
			s.tests = append(s.tests, test{pkg: e.Package, name: e.Test, secs: e.Elapsed})
		}
	}
	return sc.Err()
}

// byTime returns the packages that have tests, slowest first.
func (s *suite) byTime() []pkg {
	out := slices.DeleteFunc(slices.Clone(s.pkgs), func(p pkg) bool { return p.result == "skip" })
	slices.SortStableFunc(out, func(a, b pkg) int { return cmpDesc(a.secs, b.secs) })
	return out
}

// slowest returns the n slowest top-level tests, slowest first.
func (s *suite) slowest(n int) []test {
	out := slices.Clone(s.tests)
	slices.SortStableFunc(out, func(a, b test) int { return cmpDesc(a.secs, b.secs) })
	return out[:min(n, len(out))]
}

// ok reports whether every step passed and no test failed.
func (s *suite) ok() bool {
	return s.failed == 0 && !slices.ContainsFunc(s.steps, func(st step) bool { return st.result != "ok" })
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

//go:build race

package main

// raceEnabled reports that the test binary is built with -race.
const raceEnabled = true

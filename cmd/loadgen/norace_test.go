//go:build !race

package main

// raceEnabled says the tests run with the race detector; they then build the programs with it.
const raceEnabled = false

//go:build !race

package sdktest_test

// raceEnabled reports whether the test binary was built with -race.
const raceEnabled = false

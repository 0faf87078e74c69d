package store

import "testing"

// TestZeroOptionsAreTheDefaults: a setting left zero is the store's
// default, not "off" or "no time at all": the config file's store block
// leaves out what it does not set (package config decodes it into zeros)
// and counts on this.
func TestZeroOptionsAreTheDefaults(t *testing.T) {
	t.Parallel()
	s, err := Open(t.TempDir(), Write, Options{GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.space.min.Load(); got != DefaultMinFreeSpace {
		t.Errorf("min free space %d, want DefaultMinFreeSpace %d", got, DefaultMinFreeSpace)
	}
	if s.stallTimeout != DefaultStallTimeout || s.closeTimeout != DefaultCloseTimeout {
		t.Errorf("stall timeout %s, close timeout %s; want %s and %s", s.stallTimeout, s.closeTimeout, DefaultStallTimeout, DefaultCloseTimeout)
	}
	off, err := Open(t.TempDir(), Write, Options{GCInterval: -1, MinFreeSpace: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	if got := off.space.min.Load(); got != 0 {
		t.Errorf("MinFreeSpace -1: min free space %d, want 0 (the guard off)", got)
	}
}

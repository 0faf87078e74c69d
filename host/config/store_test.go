package config

import (
	"strings"
	"testing"
	"time"
)

// TestStoreBlock: the store block decodes into what the file says; a
// setting it leaves out is zero, which the store reads as its default
// (store.Options), so that the defaults live in one place.
func TestStoreBlock(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want Store
	}{
		{``, Store{}},
		{"store {\n}\n", Store{}},
		{"store {\n  min_free_space = \"1 GiB\"\n  stall_timeout = \"2m\"\n}\n", Store{MinFreeSpace: 1 << 30, StallTimeout: 2 * time.Minute}},
		{"store {\n  min_free_space = \"0\"\n  close_timeout = \"1s\"\n}\n", Store{MinFreeSpace: -1, CloseTimeout: time.Second}},
		{"store {\n  min_free_space = \"64MB\"\n}\n", Store{MinFreeSpace: 64e6}},
	} {
		cfg, err := Parse([]byte(tc.src), "t.hcl", opts)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		if cfg.Store != tc.want {
			t.Errorf("%q: got %+v, want %+v", tc.src, cfg.Store, tc.want)
		}
	}
	if (Default(nil).Store != Store{}) {
		t.Errorf("Default() has store settings %+v, want none (the store's defaults)", Default(nil).Store)
	}
}

func TestStoreErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src, pos, want string
	}{
		{"bad size", "store {\n  min_free_space = \"lots\"\n}\n", "t.hcl:2:20", `min_free_space must be a size such as "256MiB"`},
		{"negative size", "store {\n  min_free_space = \"-5MB\"\n}\n", "t.hcl:2:20", `min_free_space must be a size`},
		{"huge size", "store {\n  min_free_space = \"9EiB\"\n}\n", "t.hcl:2:20", "more than any disk holds"},
		{"bad duration", "store {\n  stall_timeout = \"7d\"\n}\n", "t.hcl:2:19", `durations stop at hours`},
		{"zero duration", "store {\n  close_timeout = \"0s\"\n}\n", "t.hcl:2:19", "close_timeout must be positive"},
		{"unknown attribute", "store {\n  min_free = \"1GB\"\n}\n", "t.hcl:2:3", `An argument named "min_free" is not expected here`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src), "t.hcl", opts)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.pos) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got\n%v\nwant %s and %q", err, tc.pos, tc.want)
			}
		})
	}
}

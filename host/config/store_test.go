package config

import (
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/host/store"
)

func TestStoreBlock(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want Store
	}{
		{``, DefaultStore()},
		{"store {\n  min_free_space = \"1 GiB\"\n  stall_timeout = \"2m\"\n}\n", Store{MinFreeSpace: 1 << 30, StallTimeout: 2 * time.Minute, CloseTimeout: DefaultCloseTimeout}},
		{"store {\n  min_free_space = \"0\"\n  close_timeout = \"1s\"\n}\n", Store{MinFreeSpace: -1, StallTimeout: DefaultStallTimeout, CloseTimeout: time.Second}},
		{"store {\n  min_free_space = \"64MB\"\n}\n", Store{MinFreeSpace: 64e6, StallTimeout: DefaultStallTimeout, CloseTimeout: DefaultCloseTimeout}},
	} {
		cfg, err := Parse([]byte(tc.src), "t.hcl", opts)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		if cfg.Store != tc.want {
			t.Errorf("%q: got %+v, want %+v", tc.src, cfg.Store, tc.want)
		}
	}
	if Default(nil).Store.MinFreeSpace != store.DefaultMinFreeSpace {
		t.Errorf("Default() has min_free_space %d, want the store's default", Default(nil).Store.MinFreeSpace)
	}
	// A zero Store, as a Config built in Go has, means the store's own
	// defaults rather than "off".
	if o := (Store{}).Options(); o.MinFreeSpace != 0 || o.StallTimeout != 0 {
		t.Errorf("zero Store gives %+v", o)
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

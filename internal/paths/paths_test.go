package paths

import "testing"

func TestWithin(t *testing.T) {
	for _, tt := range []struct {
		path, dir string
		want      bool
	}{
		{"/a/b", "/a", true}, {"/a", "/a", true}, {"/ab", "/a", false},
		{"/a", "/a/b", false}, {"/x", "/", true}, {"/", "/", true},
	} {
		if got := Within(tt.path, tt.dir); got != tt.want {
			t.Errorf("Within(%q, %q) = %v, want %v", tt.path, tt.dir, got, tt.want)
		}
	}
}

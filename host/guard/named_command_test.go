package guard

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestNamedByCommand(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"src/cart/cart.go", "src/cart/cart_test.go", "src/pricing/rules.go", "README.md"} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := func(p string) string { return filepath.Join(root, p) + "/" }
	file := func(p string) string { return filepath.Join(root, p) }
	for _, c := range []struct {
		cmd  string
		want []string
	}{
		{"ls src/pricing", []string{dir("src/pricing")}},
		{`grep -rn "func .*Total" src`, []string{dir("src")}},
		{"find src/cart -name '*_test.go'", []string{dir("src/cart")}},
		{"cat src/cart/cart.go | wc -l", []string{file("src/cart/cart.go")}},
		{"cd src/cart && cat cart.go cart_test.go", []string{dir("src/cart"), file("src/cart/cart.go"), file("src/cart/cart_test.go")}},
		{"ls " + file("README.md"), []string{file("README.md")}},
		{"go test ./src/nope/...", nil},
		{"ls", nil},
		{"ls .", nil},
		{"echo hello > /", nil},
		{"sed -n 1,5p README.md >/dev/null", []string{file("README.md")}},
	} {
		t.Run(c.cmd, func(t *testing.T) {
			var got []string
			for _, tg := range NamedByCommand(c.cmd, root) {
				p := tg.Path
				if tg.Dir {
					p += "/"
				}
				got = append(got, p)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

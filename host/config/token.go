package config

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
)

// ReadToken reads a bearer token file: its first line. A file others can
// read or change is refused: the token would be theirs too.
func ReadToken(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read the token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("read the token file: %w", err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("the token file %s can be read or changed by other users (mode %04o); make it owner-only: chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", fmt.Errorf("read the token file: %w", err)
	}
	tok, _, _ := strings.Cut(string(b), "\n")
	tok = strings.TrimSpace(tok)
	if len(tok) < 16 {
		return "", fmt.Errorf("the token in %s is %d characters; use at least 16 (for example: (umask 077; head -c 32 /dev/urandom | base64 > %s))", path, len(tok), path)
	}
	return tok, nil
}

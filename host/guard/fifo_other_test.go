//go:build !unix

package guard

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs") }

//go:build !unix

package plugin

import "os"

// orphaned ends a plugin whose host died.
func orphaned() { os.Exit(3) }

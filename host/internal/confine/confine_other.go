//go:build !linux

package confine

func probe() Status { return Status{Reason: "Landlock is a Linux feature"} }

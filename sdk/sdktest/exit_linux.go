package sdktest

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// waitExit reports whether process pid has exited within d. It waits on a
// pidfd, so the answer comes the moment the process is gone; a zombie
// counts as gone.
func waitExit(pid int, d time.Duration) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return errors.Is(err, unix.ESRCH)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	deadline := time.Now().Add(d)
	for {
		n, err := unix.Poll(fds, int(max(0, time.Until(deadline).Milliseconds())))
		if err == unix.EINTR {
			continue
		}
		return n > 0
	}
}

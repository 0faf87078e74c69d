package config

import (
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/hashicorp/hcl/v2"

	"github.com/hearth-dev/hearth/internal/hclspot"
)

// Store is the store block: how the data directory's store meets a full
// or stuck disk (package host/store says how each is handled). It holds
// what the file says, as plain values: a setting the file leaves out is
// zero, which the store reads as its own default (store.Options, where
// the defaults live); the engine hands these values to the store.
type Store struct {
	// MinFreeSpace is the free space, in bytes, below which writes are
	// refused (runs pause with the reason and resume once there is room);
	// -1 turns the guard off, 0 is the store's default.
	MinFreeSpace int64
	// StallTimeout is how long a commit may hang before its writes fail;
	// 0 is the store's default.
	StallTimeout time.Duration
	// CloseTimeout bounds the wait for the store's final flush on exit;
	// 0 is the store's default.
	CloseTimeout time.Duration
}

type rawStore struct {
	MinFreeSpace *string   `hcl:"min_free_space,optional"`
	StallTimeout *string   `hcl:"stall_timeout,optional"`
	CloseTimeout *string   `hcl:"close_timeout,optional"`
	Body         hcl.Body  `hcl:",body"`
	DefRange     hcl.Range `hcl:",def_range"`
}

func (v *validator) store(rs *rawStore) Store {
	var s Store
	if rs == nil {
		return s
	}
	at := func(name string) hcl.Range { return hclspot.Attr(rs.Body, name, rs.DefRange) }
	if rs.MinFreeSpace != nil {
		text := strings.TrimSpace(*rs.MinFreeSpace)
		n, err := humanize.ParseBytes(text)
		switch {
		case err != nil:
			v.errorf(at("min_free_space"), "Invalid size", "min_free_space must be a size such as \"256MiB\" or \"2GB\", or \"0\" to turn the free-space guard off; %q is not one.", *rs.MinFreeSpace)
		case n == 0:
			s.MinFreeSpace = -1
		case n > 1<<62:
			v.errorf(at("min_free_space"), "Size too large", "min_free_space %q is more than any disk holds; name a size such as \"256MiB\".", *rs.MinFreeSpace)
		default:
			s.MinFreeSpace = int64(n)
		}
	}
	s.StallTimeout = v.duration(rs.StallTimeout, at("stall_timeout"), "stall_timeout", s.StallTimeout)
	s.CloseTimeout = v.duration(rs.CloseTimeout, at("close_timeout"), "close_timeout", s.CloseTimeout)
	return s
}

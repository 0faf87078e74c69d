package config

import "github.com/hearth-dev/hearth/host/cluster"

// cluster decodes the cluster block (several hosts sharing membership
// and a view of their sessions through etcd); nil without one (one host,
// no etcd). The block, its defaults and its checks are package
// host/cluster's (cluster.Block), so that a new setting of the block
// needs nothing here. Relative TLS files are read against the file's
// directory, as every path in it.
func (v *validator) cluster(b *cluster.Block) *cluster.Config {
	c, diags := b.Decode(v.dir)
	v.diags = append(v.diags, diags...)
	return c
}

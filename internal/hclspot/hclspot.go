// Package hclspot finds where a setting is written in an HCL file, so
// that an error about it points there (file:line:col): the value of an
// attribute, one element of a list, the body of a block. host/config and
// the packages that decode their own block of the config file
// (host/cluster's cluster.Block) share it; package matcher, which reaches
// nothing of the module, keeps a copy of the two it needs.
//
// Each takes the fallback to return when the spot cannot be found: the
// attribute is absent (a default, or an error about the block as a
// whole), or the body is not HCL's native syntax (JSON), whose ranges
// this package does not read.
package hclspot

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Attr is where attribute name's value is written in body, else
// fallback.
func Attr(body hcl.Body, name string, fallback hcl.Range) hcl.Range {
	if sb, ok := body.(*hclsyntax.Body); ok {
		if a, ok := sb.Attributes[name]; ok {
			return a.Expr.Range()
		}
	}
	return fallback
}

// Elem is where the i-th element of list attribute name is written in
// body: the spot to point at when one entry is wrong. It falls back to
// the whole value, then to fallback.
func Elem(body hcl.Body, name string, i int, fallback hcl.Range) hcl.Range {
	sb, ok := body.(*hclsyntax.Body)
	if !ok || sb.Attributes[name] == nil {
		return fallback
	}
	e := sb.Attributes[name].Expr
	if t, ok := e.(*hclsyntax.TupleConsExpr); ok && i >= 0 && i < len(t.Exprs) {
		return t.Exprs[i].Range()
	}
	return e.Range()
}

// Block is body's source range, from its opening brace, else fallback.
func Block(body hcl.Body, fallback hcl.Range) hcl.Range {
	if sb, ok := body.(*hclsyntax.Body); ok {
		return sb.SrcRange
	}
	return fallback
}

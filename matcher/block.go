package matcher

import (
	"errors"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Block is the matcher block of hearth's config file, as gohcl decodes it:
//
//	matcher {
//	  threshold = 0.6
//	  top_k     = 5
//	  weights {
//	    directory = 0.30
//	    file      = 0.25
//	    tech      = 0.20
//	    freshness = 0.15
//	    load      = 0.10
//	  }
//	}
//
// It lives here, with the factors it weighs, so that the config file
// learns a new factor's weight without changing: the weights block's
// attributes are the factors' names. Pointers and bodies tell "absent"
// from "zero" and say where each setting was written, for errors that
// point at it (file:line:col).
type Block struct {
	Threshold *float64      `hcl:"threshold,optional"`
	TopK      *int          `hcl:"top_k,optional"`
	Weights   *WeightsBlock `hcl:"weights,block"`
	Body      hcl.Body      `hcl:",body"`
	DefRange  hcl.Range     `hcl:",def_range"`
}

// WeightsBlock is the weights block: one attribute per factor, by name
// ([FactorNames]); a factor left out keeps its default weight.
type WeightsBlock struct {
	Body hcl.Body `hcl:",remain"`
}

// Decode turns the block into a Config: the defaults ([DefaultConfig])
// overridden by what the block sets, checked by [Config.Validate]. Its
// IdleTimeout is the default's: the config file sets it per agent pool,
// not in this block (a pool's matcher takes its pool's idle timeout). Each
// problem is a diagnostic at the attribute it is about: an unknown weight
// (with the name it is likely a typo of), a value that is not a number,
// and every *ConfigError. A nil Block is the defaults. ctx evaluates the
// weights' expressions, as the rest of the file's.
func (b *Block) Decode(ctx *hcl.EvalContext) (Config, hcl.Diagnostics) {
	c := DefaultConfig()
	if b == nil {
		return c, nil
	}
	if b.Threshold != nil {
		c.Threshold = *b.Threshold
	}
	if b.TopK != nil {
		c.TopK = *b.TopK
	}
	var diags hcl.Diagnostics
	var wbody hcl.Body
	if b.Weights != nil && b.Weights.Body != nil {
		wbody = b.Weights.Body
		schema := &hcl.BodySchema{}
		for _, f := range factors {
			schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: f.name})
		}
		content, d := wbody.Content(schema)
		diags = append(diags, d...)
		for _, f := range factors {
			if a := content.Attributes[f.name]; a != nil {
				diags = append(diags, gohcl.DecodeExpression(a.Expr, ctx, f.weight(&c.Weights))...)
			}
		}
	}
	err := c.Validate()
	if err == nil {
		return c, diags
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var ce *ConfigError
		if !errors.As(e, &ce) {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid matcher", Detail: e.Error(), Subject: b.DefRange.Ptr()})
			continue
		}
		r := blockRange(b.Body, b.DefRange)
		switch field, ok := strings.CutPrefix(ce.Field, "weights."); {
		case ok && wbody != nil:
			r = attrRange(wbody, field, blockRange(wbody, r))
		case ce.Field == "weights" && wbody != nil:
			r = blockRange(wbody, r)
		case !ok && ce.Field != "weights":
			r = attrRange(b.Body, ce.Field, r)
		}
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid matcher setting", Detail: ce.Error(), Subject: r.Ptr()})
	}
	return c, diags
}

// attrRange is where attribute name's value is written in body, else
// fallback.
func attrRange(body hcl.Body, name string, fallback hcl.Range) hcl.Range {
	if sb, ok := body.(*hclsyntax.Body); ok {
		if a, ok := sb.Attributes[name]; ok {
			return a.Expr.Range()
		}
	}
	return fallback
}

// blockRange is body's source range, from its opening brace, else
// fallback.
func blockRange(body hcl.Body, fallback hcl.Range) hcl.Range {
	if sb, ok := body.(*hclsyntax.Body); ok {
		return sb.SrcRange
	}
	return fallback
}

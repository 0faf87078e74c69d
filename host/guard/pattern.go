package guard

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"unicode/utf8"
)

// Path patterns, as glob() and the path helpers read them:
//
//	*        any run of characters within one path segment (no '/')
//	?        one character but '/'
//	[abc]    one character of a class; [a-z] a range; [!x] or [^x] any
//	         but those; a class never matches '/'
//	{a,b}    any of the alternatives, which may hold patterns and nest
//	**       as a whole segment, any number of segments, none included:
//	         "**/x" matches x, a/x and a/b/x; "a/**" matches a and all
//	         below it; elsewhere it is the same as *
//	\c       the character c itself
//
// A pattern is compiled once into a small automaton (a Thompson NFA over
// runes) that answers two questions: does a path match it (match), and
// can some path match both it and another pattern (overlap) — the
// second is how a search over a directory, with its own filter, is
// checked against a guard's pattern without listing the directory.

// ErrPattern is wrapped by every error about a pattern.
var ErrPattern = errors.New("bad path pattern")

// maxPattern bounds a pattern's length, and maxProduct the state pairs
// an overlap check visits; past it the patterns count as overlapping,
// which is the answer that makes a guard refuse.
const (
	maxPattern = 4096
	maxProduct = 1 << 20
)

type opKind uint8

const (
	opChar   opKind = iota // the rune r
	opAny                  // any rune but '/'
	opAnyAll               // any rune
	opClass                // a rune of cls (never '/')
	opSplit                // no rune: on to out and out1
	opMatch                // the end of a match
)

type inst struct {
	op       opKind
	r        rune
	cls      *class
	out, alt int32
}

// class is a bracket expression: ranges of runes, maybe negated.
type class struct {
	neg    bool
	ranges []rune // pairs lo, hi
}

func (c *class) has(r rune) bool {
	if r == '/' {
		return false
	}
	in := false
	for i := 0; i < len(c.ranges); i += 2 {
		if c.ranges[i] <= r && r <= c.ranges[i+1] {
			in = true
			break
		}
	}
	return in != c.neg
}

// pattern is a compiled path pattern.
type pattern struct {
	src   string
	insts []inst
	start int32
	// first, follow and final drive match (see prepare).
	words  int
	first  bitset
	follow []bitset
	final  int32
	// ascii holds, for each ASCII character, the states that accept
	// it, for patterns of at most 64 states.
	ascii *[128]uint64
	// required is literal text every match contains.
	required string
	// prefix and suffix are literal text every match starts and ends
	// with: a quick refusal before running the automaton.
	prefix, suffix string
	// literal is set when the pattern has no special characters: a
	// match is then the same string.
	literal bool
	// segment is set for a pattern "**/rest" whose rest never matches
	// a '/': a path matches when its last segment matches rest, so only
	// that segment is run through an automaton (the commonest guard
	// pattern, "**/.env*", on a path dozens of bytes long).
	segment *pattern
}

// frag is a piece of automaton under construction: its entry, and the
// dangling exits to patch to what follows.
type frag struct {
	start int32
	outs  []exit
}

type exit struct {
	at  int32
	alt bool
}

type builder struct {
	src   string
	insts []inst
}

func (b *builder) add(in inst) int32 {
	in.out, in.alt = -1, -1
	b.insts = append(b.insts, in)
	return int32(len(b.insts) - 1)
}

func (b *builder) patch(outs []exit, to int32) {
	for _, e := range outs {
		if e.alt {
			b.insts[e.at].alt = to
		} else {
			b.insts[e.at].out = to
		}
	}
}

// one is a fragment that consumes one rune.
func (b *builder) one(in inst) frag {
	i := b.add(in)
	return frag{start: i, outs: []exit{{at: i}}}
}

// empty is a fragment that consumes nothing.
func (b *builder) empty() frag {
	i := b.add(inst{op: opSplit})
	// Both exits lead on: a split whose two exits are patched together.
	return frag{start: i, outs: []exit{{at: i}, {at: i, alt: true}}}
}

func (b *builder) cat(x, y frag) frag {
	b.patch(x.outs, y.start)
	return frag{start: x.start, outs: y.outs}
}

// opt is x or nothing.
func (b *builder) opt(x frag) frag {
	i := b.add(inst{op: opSplit})
	b.insts[i].out = x.start
	return frag{start: i, outs: append(x.outs, exit{at: i, alt: true})}
}

// star is x repeated any number of times.
func (b *builder) star(x frag) frag {
	i := b.add(inst{op: opSplit})
	b.insts[i].out = x.start
	b.patch(x.outs, i)
	return frag{start: i, outs: []exit{{at: i, alt: true}}}
}

func (b *builder) or(alts []frag) frag {
	if len(alts) == 1 {
		return alts[0]
	}
	x := alts[0]
	for _, y := range alts[1:] {
		i := b.add(inst{op: opSplit})
		b.insts[i].out, b.insts[i].alt = x.start, y.start
		x = frag{start: i, outs: append(append([]exit(nil), x.outs...), y.outs...)}
	}
	return x
}

func (b *builder) lit(s string) frag {
	f := b.empty()
	for _, r := range s {
		f = b.cat(f, b.one(inst{op: opChar, r: r}))
	}
	return f
}

// anyAll is any run of runes, '/' included.
func (b *builder) anyAll() frag { return b.star(b.one(inst{op: opAnyAll})) }

func (b *builder) errorf(at int, format string, args ...any) error {
	return fmt.Errorf("%w %q: %s (at byte %d)", ErrPattern, b.src, fmt.Sprintf(format, args...), at)
}

// seq compiles the pattern from pos until its end, or, inside braces,
// until the ',' or '}' that ends the alternative. segStart says whether
// pos begins a path segment.
func (b *builder) seq(pos int, inAlt, segStart bool) (frag, int, error) {
	s := b.src
	f := b.empty()
	boundary := func(i int) bool {
		return i >= len(s) || s[i] == '/' || (inAlt && (s[i] == ',' || s[i] == '}'))
	}
	for pos < len(s) {
		c := s[pos]
		switch {
		case inAlt && (c == ',' || c == '}'):
			return f, pos, nil
		case c == '/' && strings.HasPrefix(s[pos:], "/**") && boundary(pos+3) && (pos+3 >= len(s) || s[pos+3] != '/'):
			// "/**" ending the pattern: the directory itself, or
			// anything below it.
			f = b.cat(f, b.opt(b.cat(b.one(inst{op: opChar, r: '/'}), b.anyAll())))
			pos += 3
			segStart = false
		case c == '*' && strings.HasPrefix(s[pos:], "**") && segStart && boundary(pos+2):
			if pos+2 < len(s) && s[pos+2] == '/' {
				// "**/": any number of whole segments, each with its
				// slash.
				f = b.cat(f, b.opt(b.cat(b.anyAll(), b.one(inst{op: opChar, r: '/'}))))
				pos += 3
				segStart = true
				continue
			}
			f = b.cat(f, b.anyAll())
			pos += 2
			segStart = false
		case c == '*':
			for pos < len(s) && s[pos] == '*' {
				pos++
			}
			f = b.cat(f, b.star(b.one(inst{op: opAny})))
			segStart = false
		case c == '?':
			f = b.cat(f, b.one(inst{op: opAny}))
			pos++
			segStart = false
		case c == '[':
			cls, next, err := b.class(pos)
			if err != nil {
				return f, pos, err
			}
			f = b.cat(f, b.one(inst{op: opClass, cls: cls}))
			pos = next
			segStart = false
		case c == '{':
			var alts []frag
			open := pos
			pos++
			for {
				alt, next, err := b.seq(pos, true, segStart)
				if err != nil {
					return f, pos, err
				}
				alts = append(alts, alt)
				pos = next
				if pos >= len(s) {
					return f, pos, b.errorf(open, "a { is not closed by a }")
				}
				pos++
				if s[pos-1] == '}' {
					break
				}
			}
			f = b.cat(f, b.or(alts))
			segStart = false
		case c == '}' || c == ']':
			// A closing bracket with no opening one is itself.
			f = b.cat(f, b.one(inst{op: opChar, r: rune(c)}))
			pos++
			segStart = false
		default:
			if c == '\\' {
				pos++
				if pos >= len(s) {
					return f, pos, b.errorf(pos-1, "it ends in a lone \\")
				}
			}
			r, size := utf8.DecodeRuneInString(s[pos:])
			f = b.cat(f, b.one(inst{op: opChar, r: r}))
			pos += size
			segStart = r == '/'
		}
	}
	if inAlt {
		return f, pos, nil
	}
	return f, pos, nil
}

// class reads the bracket expression at s[pos] == '['.
func (b *builder) class(pos int) (*class, int, error) {
	s := b.src
	open := pos
	pos++
	c := &class{}
	if pos < len(s) && (s[pos] == '!' || s[pos] == '^') {
		c.neg = true
		pos++
	}
	first := true
	for {
		if pos >= len(s) {
			return nil, pos, b.errorf(open, "a [ is not closed by a ]")
		}
		if s[pos] == ']' && !first {
			return c, pos + 1, nil
		}
		first = false
		lo, next, err := b.classRune(pos)
		if err != nil {
			return nil, pos, err
		}
		pos = next
		hi := lo
		if pos+1 < len(s) && s[pos] == '-' && s[pos+1] != ']' {
			hi, next, err = b.classRune(pos + 1)
			if err != nil {
				return nil, pos, err
			}
			pos = next
			if hi < lo {
				return nil, pos, b.errorf(open, "the range %c-%c runs backwards", lo, hi)
			}
		}
		c.ranges = append(c.ranges, lo, hi)
	}
}

func (b *builder) classRune(pos int) (rune, int, error) {
	s := b.src
	if s[pos] == '\\' {
		pos++
		if pos >= len(s) {
			return 0, pos, b.errorf(pos-1, "it ends in a lone \\")
		}
	}
	r, size := utf8.DecodeRuneInString(s[pos:])
	return r, pos + size, nil
}

// compilePattern compiles src, lower-cased first when fold is set.
func compilePattern(src string, fold bool) (*pattern, error) {
	if len(src) > maxPattern {
		return nil, fmt.Errorf("%w: %d bytes, more than the %d a pattern may have", ErrPattern, len(src), maxPattern)
	}
	if fold {
		src = foldCase(src)
	}
	b := &builder{src: src}
	f, _, err := b.seq(0, false, true)
	if err != nil {
		return nil, err
	}
	slashed := false
	if !strings.Contains(src, "{") {
		src, slashed = trimSlash(src)
		b = &builder{src: src}
		f, _, _ = b.seq(0, false, true)
		if slashed {
			f = b.cat(f, b.opt(b.one(inst{op: opChar, r: '/'})))
		}
	}
	prefix, suffix := literalEnds(src)
	if alts, ok := expandBraces(src, maxAlternatives); ok && (len(alts) > 1 || alts[0] != src) {
		// Braces expanded, as doublestar reads them: "{a,**}/b" is
		// "a/b" or "**/b", where ** stands for whole segments.
		b = &builder{src: src}
		frags := make([]frag, 0, len(alts))
		for _, alt := range alts {
			alt, altSlashed := trimSlash(alt)
			ab := &builder{src: alt, insts: b.insts}
			af, _, err := ab.seq(0, false, true)
			if err != nil {
				return nil, err
			}
			if altSlashed {
				af = ab.cat(af, ab.opt(ab.one(inst{op: opChar, r: '/'})))
				slashed = true
			}
			b.insts = ab.insts
			frags = append(frags, af)
			pre, suf := literalEnds(alt)
			if len(frags) == 1 {
				prefix, suffix = pre, suf
			}
			prefix, suffix = commonPrefix(prefix, pre), commonSuffix(suffix, suf)
		}
		f = b.or(frags)
	}
	m := b.add(inst{op: opMatch})
	b.patch(f.outs, m)
	p := &pattern{src: src, insts: b.insts, start: f.start}
	p.literal = !slashed && !strings.ContainsAny(src, `*?[{\`)
	if slashed {
		suffix = ""
	}
	p.prefix, p.suffix = prefix, suffix
	if !strings.Contains(src, "{") && !slashed {
		p.required = requiredLiteral(src)
	}
	p.prepare()
	if rest, ok := strings.CutPrefix(src, "**/"); ok && rest != "" && !slashed {
		// Folded already: compiled as it is.
		if q, err := compilePattern(rest, false); err == nil && !q.crossesSlash() {
			p.segment = q
		}
	}
	return p, nil
}

// crossesSlash reports whether some state of the pattern accepts a '/'.
func (p *pattern) crossesSlash() bool {
	for i := range p.insts {
		if in := &p.insts[i]; in.op == opAnyAll || (in.op == opChar && in.r == '/') {
			return true
		}
	}
	return false
}

// compileVisibleBelow is the pattern of base and of every path below it
// whose names below base are not hidden (do not start with a dot).
func compileVisibleBelow(base string, fold bool) *pattern {
	if fold {
		base = foldCase(base)
	}
	b := &builder{src: base}
	visible := &class{neg: true, ranges: []rune{'.', '.'}}
	seg := b.cat(b.one(inst{op: opChar, r: '/'}), b.cat(b.one(inst{op: opClass, cls: visible}), b.star(b.one(inst{op: opAny}))))
	f := b.cat(b.lit(base), b.star(seg))
	m := b.add(inst{op: opMatch})
	b.patch(f.outs, m)
	p := &pattern{src: base + "/**", insts: b.insts, start: f.start, prefix: base}
	p.prepare()
	return p
}

// maxAlternatives bounds the patterns braces expand to before they are
// compiled; past it they are compiled as they are.
const maxAlternatives = 64

// expandBraces expands the braces of a pattern that compiled: every
// alternative, escapes and bracket expressions kept. ok is false past
// limit alternatives.
func expandBraces(src string, limit int) ([]string, bool) {
	open := -1
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '\\':
			i++
		case '[':
			i = classEnd(src, i)
		case '{':
			open = i
		}
		if open >= 0 {
			break
		}
	}
	if open < 0 {
		return []string{src}, true
	}
	// The alternatives of the first brace, at its depth.
	var alts []string
	depth, start, end := 0, open+1, -1
	for i := open; i < len(src) && end < 0; i++ {
		switch src[i] {
		case '\\':
			i++
		case '[':
			i = classEnd(src, i)
		case '{':
			depth++
		case ',':
			if depth == 1 {
				alts = append(alts, src[start:i])
				start = i + 1
			}
		case '}':
			depth--
			if depth == 0 {
				alts = append(alts, src[start:i])
				end = i
			}
		}
	}
	if end < 0 {
		return nil, false
	}
	var out []string
	for _, a := range alts {
		more, ok := expandBraces(src[:open]+a+src[end+1:], limit)
		if !ok || len(out)+len(more) > limit {
			return nil, false
		}
		out = append(out, more...)
	}
	return out, true
}

// classEnd is the index of the ] closing the bracket expression at i,
// as builder.class reads it.
func classEnd(src string, i int) int {
	j := i + 1
	if j < len(src) && (src[j] == '!' || src[j] == '^') {
		j++
	}
	first := true
	for ; j < len(src); j++ {
		switch {
		case src[j] == '\\':
			j++
		case src[j] == ']' && !first:
			return j
		}
		first = false
	}
	return len(src)
}

// compileLiteral is the pattern that matches path alone.
func compileLiteral(path string, fold bool) *pattern {
	if fold {
		path = foldCase(path)
	}
	b := &builder{src: path}
	f := b.lit(path)
	m := b.add(inst{op: opMatch})
	b.patch(f.outs, m)
	p := &pattern{src: path, insts: b.insts, start: f.start, literal: true, prefix: path, suffix: path}
	p.prepare()
	return p
}

// literalEnds returns the literal text before a pattern's first special
// character and after its last one, escapes left out.
func literalEnds(src string) (prefix, suffix string) {
	i := strings.IndexAny(src, `*?[{\`)
	if i < 0 {
		return src, src
	}
	prefix = src[:i]
	if strings.HasPrefix(src[i:], "**") {
		// "a/**" matches a itself: the slash before it is optional.
		prefix = strings.TrimSuffix(prefix, "/")
	}
	j := strings.LastIndexAny(src, `*?[]{},\`)
	suffix = src[j+1:]
	if j > 0 && src[j] == '*' && src[j-1] == '*' {
		// "**/x" matches x itself: the slash after it is optional.
		suffix = strings.TrimPrefix(suffix, "/")
	}
	if j > 0 && src[j-1] == '\\' {
		// The last special character is escaped: play safe.
		suffix = ""
	}
	return prefix, suffix
}

// trimSlash drops a pattern's trailing slash, which is compiled as
// optional: paths are clean, and "dir/" means dir.
func trimSlash(src string) (string, bool) {
	if len(src) > 1 && strings.HasSuffix(src, "/") && !strings.HasSuffix(src, `\/`) {
		return src[:len(src)-1], true
	}
	return src, false
}

func commonPrefix(a, b string) string {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return a[:n]
}

func commonSuffix(a, b string) string {
	n := 0
	for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	return a[len(a)-n:]
}

// requiredLiteral is the longest run of plain characters that every
// match of a pattern without braces contains: a quick refusal of most
// paths. The slash that goes with a ** segment is optional, and is not
// part of a run.
func requiredLiteral(src string) string {
	best, run := "", ""
	flush := func() {
		if len(run) > len(best) {
			best = run
		}
		run = ""
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '\\':
			if i+1 < len(src) && !strings.ContainsRune(`*?[]{},\/`, rune(src[i+1])) {
				run += src[i+1 : i+2]
			} else {
				flush()
			}
			i++
		case c == '[':
			flush()
			i = classEnd(src, i)
		case c == '*' || c == '?':
			flush()
		case c == '/' && (strings.HasPrefix(src[i+1:], "**") || (i >= 2 && src[i-2:i] == "**")):
			flush()
		default:
			run += src[i : i+1]
		}
	}
	flush()
	return best
}

// foldCase lower-cases s, without allocating when it has no upper case.
func foldCase(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			return strings.ToLower(s)
		}
	}
	return s
}

// bitset is a set of automaton states.
type bitset []uint64

func (b bitset) set(i int32)      { b[i/64] |= 1 << (uint(i) % 64) }
func (b bitset) has(i int32) bool { return b[i/64]&(1<<(uint(i)%64)) != 0 }

// prepare precomputes what matching needs: for each state that
// consumes a rune, the states that follow it once the splits after it
// are taken (its closure), and the closure of the start. A match then
// moves a set of states one rune at a time, with no recursion.
func (p *pattern) prepare() {
	n := len(p.insts)
	p.words = (n + 63) / 64
	closure := func(from int32) bitset {
		b := make(bitset, p.words)
		var walk func(i int32)
		seen := make(bitset, p.words)
		walk = func(i int32) {
			if i < 0 || seen.has(i) {
				return
			}
			seen.set(i)
			if in := &p.insts[i]; in.op == opSplit {
				walk(in.out)
				walk(in.alt)
				return
			}
			b.set(i)
		}
		walk(from)
		return b
	}
	p.first = closure(p.start)
	p.follow = make([]bitset, n)
	for i := range p.insts {
		if in := &p.insts[i]; in.op != opSplit && in.op != opMatch {
			p.follow[i] = closure(in.out)
		}
	}
	for i := range p.insts {
		if p.insts[i].op == opMatch {
			p.final = int32(i)
		}
	}
	if p.words == 1 {
		p.ascii = new([128]uint64)
		for c := range rune(128) {
			for i := range p.insts {
				if p.insts[i].accepts(c) {
					p.ascii[c] |= 1 << uint(i)
				}
			}
		}
	}
}

// match reports whether path (folded already when the pattern is) is in
// the pattern's language.
func (p *pattern) match(path string) bool {
	if p.segment != nil {
		return p.segment.match(path[strings.LastIndexByte(path, '/')+1:])
	}
	if p.literal {
		return path == p.src
	}
	if !strings.HasPrefix(path, p.prefix) || !strings.HasSuffix(path, p.suffix) || !strings.Contains(path, p.required) {
		return false
	}
	if p.words == 1 {
		cur := p.first[0]
		for _, r := range path {
			var next uint64
			if r < 128 {
				for m := cur & p.ascii[r]; m != 0; m &= m - 1 {
					next |= p.follow[bits.TrailingZeros64(m)][0]
				}
			} else {
				for m := cur; m != 0; m &= m - 1 {
					i := bits.TrailingZeros64(m)
					if p.insts[i].accepts(r) {
						next |= p.follow[i][0]
					}
				}
			}
			if next == 0 {
				return false
			}
			cur = next
		}
		return cur&(1<<uint(p.final)) != 0
	}
	cur, next := make(bitset, p.words), make(bitset, p.words)
	copy(cur, p.first)
	for _, r := range path {
		clear(next)
		any := false
		for w, word := range cur {
			for m := word; m != 0; m &= m - 1 {
				i := w*64 + bits.TrailingZeros64(m)
				if p.insts[i].accepts(r) {
					for k, f := range p.follow[i] {
						next[k] |= f
					}
					any = true
				}
			}
		}
		if !any {
			return false
		}
		cur, next = next, cur
	}
	return cur.has(p.final)
}

func (in *inst) accepts(r rune) bool {
	switch in.op {
	case opChar:
		return in.r == r
	case opAny:
		return r != '/'
	case opAnyAll:
		return true
	case opClass:
		return in.cls.has(r)
	}
	return false
}

// overlap reports whether some path matches both p and q (compiled with
// the same folding). It explores the product of the two automata; past
// maxProduct state pairs it answers yes.
func overlap(p, q *pattern) bool {
	if len(p.insts)*len(q.insts) > maxProduct {
		return true
	}
	// Two literal starts (or ends) that disagree leave nothing in common.
	if !prefixCompatible(p.prefix, q.prefix) || !suffixCompatible(p.suffix, q.suffix) {
		return false
	}
	type pair struct{ a, b int32 }
	seen := make(map[pair]bool)
	var stack []pair
	var push func(a, b int32)
	push = func(a, b int32) {
		if a < 0 || b < 0 {
			return
		}
		if seen[pair{a, b}] {
			return
		}
		seen[pair{a, b}] = true
		if len(seen) > maxProduct {
			return
		}
		switch {
		case p.insts[a].op == opSplit:
			push(p.insts[a].out, b)
			push(p.insts[a].alt, b)
		case q.insts[b].op == opSplit:
			push(a, q.insts[b].out)
			push(a, q.insts[b].alt)
		default:
			stack = append(stack, pair{a, b})
		}
	}
	push(p.start, q.start)
	for len(stack) > 0 {
		if len(seen) > maxProduct {
			return true
		}
		st := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		x, y := &p.insts[st.a], &q.insts[st.b]
		if x.op == opMatch && y.op == opMatch {
			return true
		}
		if x.op == opMatch || y.op == opMatch {
			continue
		}
		if intersects(x, y) {
			push(x.out, y.out)
		}
	}
	return false
}

func prefixCompatible(a, b string) bool {
	n := min(len(a), len(b))
	return a[:n] == b[:n]
}

func suffixCompatible(a, b string) bool {
	n := min(len(a), len(b))
	return a[len(a)-n:] == b[len(b)-n:]
}

// intersects reports whether some rune is accepted by both x and y.
func intersects(x, y *inst) bool {
	if x.op > y.op {
		x, y = y, x
	}
	switch x.op {
	case opChar:
		return y.accepts(x.r)
	case opAny, opAnyAll:
		if y.op == opClass {
			return y.cls.nonEmpty()
		}
		return true
	case opClass:
		return x.cls.meets(y.cls)
	}
	return false
}

func (c *class) nonEmpty() bool {
	if c.neg {
		return true
	}
	for i := 0; i < len(c.ranges); i += 2 {
		lo, hi := c.ranges[i], c.ranges[i+1]
		if lo != '/' || hi != '/' {
			return true
		}
	}
	return false
}

// meets reports whether the classes share a rune.
func (c *class) meets(d *class) bool {
	if c.neg && d.neg {
		return true
	}
	if c.neg {
		c, d = d, c
	}
	// c is positive: look for one of its runes that d accepts. A range
	// is checked at its ends and just past each of d's range ends inside
	// it, which is where membership in d can change.
	for i := 0; i < len(c.ranges); i += 2 {
		lo, hi := c.ranges[i], c.ranges[i+1]
		if hi-lo < 256 {
			for r := lo; r <= hi; r++ {
				if d.has(r) {
					return true
				}
			}
			continue
		}
		cands := []rune{lo, hi}
		for j := 0; j < len(d.ranges); j += 2 {
			for _, r := range []rune{d.ranges[j], d.ranges[j] - 1, d.ranges[j+1], d.ranges[j+1] + 1} {
				if lo <= r && r <= hi {
					cands = append(cands, r)
				}
			}
		}
		for _, r := range cands {
			if r != '/' && d.has(r) {
				return true
			}
		}
		// '/' itself is never a member; its neighbours may be.
		for _, r := range []rune{'/' - 1, '/' + 1} {
			if lo <= r && r <= hi && d.has(r) {
				return true
			}
		}
	}
	return false
}

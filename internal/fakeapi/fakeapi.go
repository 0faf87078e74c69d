// Package fakeapi is a scripted model behind local fakes of the two APIs
// the model agent speaks, Anthropic's Messages API (POST /v1/messages) and
// OpenAI's Chat Completions (POST /v1/chat/completions), for tests and
// benchmarks that must not reach the internet. Both speak the documented
// wire formats: tool_use and tool_result blocks, tool_calls and tool
// messages, usage with cache fields, error bodies with their status codes
// and retry-after.
//
// It also serves what the real Claude Code CLI needs to run against it
// (ANTHROPIC_BASE_URL): streamed Messages responses ("stream": true,
// server-sent events: message_start, content blocks with their deltas,
// message_delta with the stop reason and output tokens, message_stop),
// token counting (POST /v1/messages/count_tokens), the query parameters
// Claude Code sends (?beta=true, recorded in Recorded.Query), and its
// reachability check (HEAD /api/hello). Claude Code's tools are Read,
// Write and Bash: the model reads, writes, lists, searches and runs
// through them (see vocabulary), with the absolute paths Claude Code's
// tools take, read against the "Primary working directory" it states,
// and skips the system reminders it adds to a conversation when it looks
// for the prompt. cmd/hearth-fakeapi serves it on a local address.
//
// # How the scripted model behaves
//
// The model reads the conversation it is sent, finds the task's prompt
// (the last user text) and follows its directives, words of the prompt:
//
//	ask:DIR            list DIR, then read every file the listing shows
//	read:PATH          read PATH
//	list:DIR           list DIR
//	search:DIR:RE      search DIR for RE
//	write:PATH:TEXT    write TEXT to PATH
//	shell:CMD          run CMD (underscores stand for spaces)
//	tool:NAME:KEY=VAL  call tool NAME (an MCP tool's, say) with {KEY: VAL}
//	hang               never answer (until the request is cancelled),
//	                   once the calls of the directives before it are made
//
// and any word that looks like a file path (a "/" in it and an extension,
// such as matcher/score.go, trailing punctuation aside) is a read:PATH.
//
// It calls a tool for a file or a listing only if that file's content (or
// listing) is not already in the conversation from a tool result that
// worked, and never tries the same call twice in one task: a call that
// failed or was denied is given up, and the answer says so. Tool calls it
// can make together are made in one response (a listing's reads all at
// once). Once it has what the directives need, it answers.
//
// # How tokens are counted and cached
//
// A token is four bytes of the request's JSON, unit by unit: each tool,
// each system block, each content block (Anthropic) or message (OpenAI).
// Anthropic's cache follows the documented rules: a prefix is written at
// each cache_control breakpoint, and a request reads the longest written
// prefix that ends at one of its breakpoints or up to 20 blocks before
// one. OpenAI's cache is automatic: the longest prefix, at a message
// boundary, of any earlier request. Either caches only prefixes of at
// least MinCacheTokens (1024 by default, as both providers document). The
// cache is shared by every request with the same key, as a provider's is
// per organization. Output tokens are the response's bytes over four.
package fakeapi

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hearth-dev/hearth/internal/text"
)

// Server is the fake. Start it with New; its URL serves both APIs.
type Server struct {
	*httptest.Server
	// Key is the API key it accepts: Anthropic's x-api-key header or,
	// as the Go SDK sends it, Authorization: Bearer; OpenAI's
	// Authorization: Bearer.
	Key string
	// MinCacheTokens is the shortest prefix it caches.
	MinCacheTokens int64
	// SpacedArguments makes the model write its tool calls' arguments
	// (OpenAI) and tool uses' inputs (Anthropic) with a space after each
	// colon and comma, {"path": "x"}, as Python's json.dumps writes them
	// and so many OpenAI-compatible servers send them; by default they
	// are compact, {"path":"x"}.
	SpacedArguments bool
	// Latency, when set, is how long the model takes to give a response
	// with usage u: the server waits that long (or until the caller gives
	// up) before answering. Nil answers at once.
	Latency func(u Usage) time.Duration

	mu       sync.Mutex
	requests []*Recorded
	cache    map[[32]byte]bool
	failures []Failure
	ids      int
	counts   int
	// Hung receives a request that hangs, when it starts; Released when
	// its caller gave up on it.
	Hung, Released chan *Recorded
}

// Failure is an error response the server gives before its next normal
// ones.
type Failure struct {
	// Status is the HTTP status (429, 529, 401, 400...).
	Status int
	// RetryAfter is the retry-after header's value, if any.
	RetryAfter string
}

// Recorded is one request the server received.
type Recorded struct {
	// API is "anthropic" or "openai".
	API    string
	Header http.Header
	// Query is the URL's query string (Claude Code sends "beta=true").
	Query string
	Body  []byte
	// Turns is the conversation as the model read it.
	Turns []Turn
	// Breakpoints counts the cache_control markers (Anthropic).
	Breakpoints int
	// Usage is what the response reported.
	Usage Usage
	// Status is the response's HTTP status.
	Status int
}

// String returns the request's body.
func (r *Recorded) String() string { return string(r.Body) }

// Usage is a response's token counts, in the agent's terms: Input is
// billed at the full price (Anthropic's input_tokens; OpenAI's
// prompt_tokens less cached_tokens).
type Usage struct {
	Input, CachedInput, CacheWrite, Output int64
}

// Turn is one message as the model reads it.
type Turn struct {
	Role   string
	Blocks []Block
}

// Block is one piece of a turn.
type Block struct {
	Type    string // text, tool_use, tool_result
	Text    string
	ID      string
	Name    string
	Input   map[string]any
	IsError bool
}

// New starts a server accepting key, on a loopback port of its own.
func New(key string) *Server {
	s := newServer(key)
	s.Server = httptest.NewServer(s.mux())
	return s
}

// NewOn starts a server accepting key on ln.
func NewOn(ln net.Listener, key string) *Server {
	s := newServer(key)
	s.Server = &httptest.Server{Listener: ln, Config: &http.Server{Handler: s.mux()}}
	s.Server.Start()
	return s
}

func newServer(key string) *Server {
	return &Server{Key: key, MinCacheTokens: 1024, cache: map[[32]byte]bool{},
		Hung: make(chan *Recorded, 8), Released: make(chan *Recorded, 8)}
}

func (s *Server) mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.anthropic)
	mux.HandleFunc("POST /v1/messages/count_tokens", s.countTokens)
	mux.HandleFunc("HEAD /api/hello", hello)
	mux.HandleFunc("POST /v1/chat/completions", s.openai)
	return mux
}

// Fail queues failures to answer the next requests with.
func (s *Server) Fail(fs ...Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, fs...)
}

// Requests returns the requests received so far.
func (s *Server) Requests() []*Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Recorded(nil), s.requests...)
}

// Reset forgets the requests and the cache.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests, s.cache = nil, map[[32]byte]bool{}
}

func (s *Server) nextID(prefix string) string {
	s.ids++
	return fmt.Sprintf("%s_%04d", prefix, s.ids)
}

// begin records a request and says which failure, if any, to answer it
// with.
func (s *Server) begin(api string, r *http.Request, body []byte, authorized bool) (*Recorded, *Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := &Recorded{API: api, Header: r.Header.Clone(), Query: queryOf(r), Body: body, Status: 200}
	s.requests = append(s.requests, rec)
	if !authorized {
		rec.Status = http.StatusUnauthorized
		return rec, &Failure{Status: http.StatusUnauthorized}
	}
	if len(s.failures) > 0 {
		f := s.failures[0]
		s.failures = s.failures[1:]
		rec.Status = f.Status
		return rec, &f
	}
	return rec, nil
}

// unit is one piece of a request's prefix, for counting and caching.
type unit struct {
	json       []byte
	breakpoint bool
}

func tokens(b []byte) int64 { return int64(len(b)+3) / 4 }

// cached works out, for a request made of units, the tokens read from the
// cache and written to it, and writes them. Anthropic (breakpoints)
// caches at its markers; OpenAI (automatic) at every unit boundary.
func (s *Server) cached(units []unit, automatic bool) (read, write, total int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hashes := make([][32]byte, len(units))
	cum := make([]int64, len(units))
	var h [32]byte
	for i, u := range units {
		h = sha256.Sum256(append(h[:], u.json...))
		hashes[i] = h
		total += tokens(u.json)
		cum[i] = total
	}
	readAt := -1
	for i := range units {
		if automatic {
			if s.cache[hashes[i]] {
				readAt = i
			}
			continue
		}
		if !units[i].breakpoint {
			continue
		}
		for j := i; j >= 0 && j >= i-20; j-- {
			if s.cache[hashes[j]] {
				readAt = max(readAt, j)
				break
			}
		}
	}
	if readAt >= 0 {
		read = cum[readAt]
	}
	lastWrite := readAt
	for i, u := range units {
		if (automatic || u.breakpoint) && cum[i] >= s.MinCacheTokens && i > readAt {
			s.cache[hashes[i]] = true
			lastWrite = i
		}
	}
	if !automatic && lastWrite > readAt {
		write = cum[lastWrite] - read
	}
	return read, write, total
}

// directive is one word of a prompt the model acts on.
type directive struct{ verb, arg, arg2 string }

func directives(prompt string) []directive {
	var ds []directive
	for _, f := range strings.Fields(prompt) {
		verb, rest, colon := strings.Cut(f, ":")
		if !colon && verb != "hang" {
			verb = ""
		}
		switch verb {
		case "ask", "read", "list", "shell":
			ds = append(ds, directive{verb: verb, arg: strings.ReplaceAll(rest, "_", " ")})
			if verb != "shell" {
				ds[len(ds)-1].arg = rest
			}
		case "search", "write", "tool":
			a, b, _ := strings.Cut(rest, ":")
			ds = append(ds, directive{verb: verb, arg: a, arg2: b})
		case "hang":
			ds = append(ds, directive{verb: "hang"})
		default:
			if p := strings.TrimRight(f, ".,;:?!)\"'`"); !strings.Contains(f, ":") && strings.Contains(p, "/") && path.Ext(p) != "" {
				ds = append(ds, directive{verb: "read", arg: strings.TrimLeft(p, "(\"'`")})
			}
		}
	}
	return ds
}

// call is a tool call the model decides to make.
type call struct {
	name  string
	input map[string]any
}

// think is the scripted model: given the conversation, the tool calls to
// make next, or the answer. The calls are in the model agent's words
// (read, list, search, write, shell with their path, pattern, content
// and command); v reads the conversation's tool uses into those words
// (see vocabulary), so that a client with other tools (Claude Code's)
// is understood the same way.
func think(turns []Turn, v vocabulary) (calls []call, answer string, hang bool) {
	p := -1
	var prompt string
	for i := len(turns) - 1; i >= 0 && p < 0; i-- {
		if turns[i].Role != "user" {
			continue
		}
		for _, b := range turns[i].Blocks {
			if b.Type == "text" && !v.aside(b.Text) {
				p, prompt = i, b.Text
			}
		}
	}
	if p < 0 {
		return nil, "There is no question here.", false
	}
	// What the conversation holds: tool results that worked, anywhere;
	// calls tried in this task, worked or not.
	uses := map[string]Block{}
	known := map[string]string{} // "read path" or "list dir" -> result
	tried := map[string]bool{}
	var failures []string
	for i, t := range turns {
		for _, b := range t.Blocks {
			switch b.Type {
			case "tool_use":
				uses[b.ID] = b
			case "tool_result":
				u, ok := uses[b.ID]
				if !ok {
					continue
				}
				name, in, ok := v.decode(u.Name, u.Input)
				if !ok {
					continue
				}
				k := key(name, in)
				if i > p {
					tried[k] = true
					if b.IsError || strings.HasPrefix(b.Text, "error: ") {
						// Claude Code appends its system reminders to a
						// tool's result; the failure is what comes before.
						why, _, _ := strings.Cut(b.Text, "<system-reminder>")
						failures = append(failures, fmt.Sprintf("%s failed: %s", k, strings.TrimSpace(why)))
					}
				}
				if !b.IsError && !strings.HasPrefix(b.Text, "error: ") {
					known[k] = b.Text
				}
			}
		}
	}
	want := func(name string, in map[string]any) bool {
		k := key(name, in)
		if tried[k] || !v.offers(name) {
			return false
		}
		if _, ok := known[k]; ok && (name == "read" || name == "list") {
			return false
		}
		tried[k] = true
		calls = append(calls, call{name, in})
		return true
	}
	var used []string
	for _, d := range directives(prompt) {
		switch d.verb {
		case "hang":
			if len(calls) > 0 {
				return calls, "", false
			}
			return nil, "", true
		case "read", "list":
			want(d.verb, map[string]any{"path": d.arg})
			used = append(used, d.arg)
		case "ask":
			listing, ok := known[key("list", map[string]any{"path": d.arg})]
			if !ok {
				want("list", map[string]any{"path": d.arg})
				continue
			}
			for _, name := range strings.Fields(listing) {
				if strings.HasSuffix(name, "/") {
					continue
				}
				f := strings.TrimSuffix(d.arg, "/") + "/" + name
				want("read", map[string]any{"path": f})
				used = append(used, f)
			}
		case "search":
			want("search", map[string]any{"path": d.arg, "pattern": d.arg2})
		case "write":
			want("write", map[string]any{"path": d.arg, "content": d.arg2})
		case "shell":
			want("shell", map[string]any{"command": d.arg})
		case "tool":
			k, v, _ := strings.Cut(d.arg2, "=")
			want(d.arg, map[string]any{k: v})
			used = append(used, v)
		}
	}
	if len(calls) > 0 {
		return calls, "", false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Answer to %q, from %d files: %s.", oneLine(prompt, 120), len(used), strings.Join(used, ", "))
	for _, f := range failures {
		fmt.Fprintf(&b, " Could not use %s.", f)
	}
	// A realistic answer is a few hundred tokens.
	b.WriteString(strings.Repeat(" The package's design follows from the files read above.", 12))
	return nil, b.String(), false
}

// arguments is a tool call's input as the model writes it: compact, or
// spaced (SpacedArguments), keys sorted either way.
func (s *Server) arguments(in map[string]any) []byte {
	if !s.SpacedArguments {
		return mustJSON(in)
	}
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = string(mustJSON(k)) + ": " + string(mustJSON(in[k]))
	}
	return []byte("{" + strings.Join(parts, ", ") + "}")
}

func key(name string, in map[string]any) string {
	b, _ := json.Marshal(in)
	return name + " " + string(b)
}

func oneLine(s string, n int) string {
	return text.Prefix(strings.Join(strings.Fields(s), " "), n)
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	return b, true
}

// wait waits the model's latency for usage u, or until the caller gives
// up.
func (s *Server) wait(r *http.Request, u Usage) {
	if s.Latency == nil {
		return
	}
	t := time.NewTimer(s.Latency(u))
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}

// hangUntilCancelled holds a request until its caller gives up.
func (s *Server) hangUntilCancelled(r *http.Request, rec *Recorded) {
	s.Hung <- rec
	<-r.Context().Done()
	s.Released <- rec
}

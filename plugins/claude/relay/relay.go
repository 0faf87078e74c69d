// Package relay is the Claude Code command hook that hands a hook's
// payload to whoever answers it, and prints the answer: the agent of a
// managed Claude Code session, over the unix socket it listens on
// (plugins/claude), or the hearth daemon, over its HTTP hook endpoint
// with its token. Claude Code starts a hook's program for every tool use,
// so this package imports the standard library and
// host/claudecode/answer alone: cmd/hearth-hook, built from it, starts in
// about a millisecond, where the hearth binary, which links the whole
// host, takes over ten (BENCHMARKS.md, "Claude Code's hooks").
//
// When the answer cannot be had, a PreToolUse is denied when failing
// closed (always, for a managed session; by --when-unreachable for the
// daemon) and goes ahead with a notice otherwise, as `hearth hook` does
// (answer.Failed). It never exits 2: Claude Code reads 2 as "block",
// which would keep a Stop from stopping.
package relay

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hearth-dev/hearth/host/claudecode/answer"
)

// Timeout bounds the wait for an answer: well inside the timeout Claude
// Code gives the hook (30 s in the managed agent's settings, 10 s in
// examples/claude-code's), so that failing closed gets to answer.
const Timeout = 8 * time.Second

// maxAnswer bounds an answer read back.
const maxAnswer = 1 << 20

// Unix sends payload to the agent listening on socket and returns its
// answer.
func Unix(socket string, payload []byte) ([]byte, error) {
	c, err := net.DialTimeout("unix", socket, Timeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(Timeout))
	if _, err := c.Write(payload); err != nil {
		return nil, err
	}
	if err := c.(*net.UnixConn).CloseWrite(); err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(c, maxAnswer))
}

// HTTP posts payload to a hearth daemon's hook endpoint url with token
// and returns its answer. A status other than 200 is an error naming it.
func HTTP(url, token string, payload []byte) ([]byte, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: Timeout}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the daemon answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// Run is hearth-hook's main: it reads the payload on stdin, relays it as
// args say, prints the answer and returns the exit status.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hearth-hook", flag.ContinueOnError)
	fs.SetOutput(stderr)
	socket := fs.String("socket", "", "a managed Claude Code session's agent socket (plugins/claude); fails closed")
	url := fs.String("url", "http://127.0.0.1:7411/hooks/claude-code", "the hearth daemon's hook endpoint")
	dataDir := fs.String("data-dir", "", "the daemon's data directory, whose token file the endpoint needs")
	tokenFile := fs.String("token-file", "", "the daemon's token file (default: DATA_DIR/token)")
	when := fs.String("when-unreachable", "allow", `what a PreToolUse gets when the daemon cannot answer: "allow" or "deny"`)
	if err := fs.Parse(args); err != nil {
		return 1
	}
	deny := *socket != "" || *when != "allow"
	payload, err := io.ReadAll(io.LimitReader(stdin, answer.MaxPayload+1))
	var out []byte
	if err == nil {
		switch {
		case *socket != "":
			out, err = Unix(*socket, payload)
		case *when != "allow" && *when != "deny":
			err = fmt.Errorf("--when-unreachable must be allow or deny, not %q", *when)
		default:
			var token string
			if token, err = readToken(*tokenFile, *dataDir); err == nil {
				out, err = HTTP(*url, token, payload)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "hearth-hook: %v\n", err)
		out = answer.Failed(answer.EventName(payload), deny, err.Error())
	}
	if _, err := stdout.Write(out); err != nil {
		return 1
	}
	return 0
}

// readToken reads the daemon's token from file, or from dataDir's token.
func readToken(file, dataDir string) (string, error) {
	if file == "" {
		if dataDir == "" {
			return "", errors.New("no token: give --data-dir (its token file) or --token-file")
		}
		file = strings.TrimSuffix(dataDir, "/") + "/token"
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("read the daemon's token: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

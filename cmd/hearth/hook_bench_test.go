package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/host/api/client"
	"github.com/hearth-dev/hearth/host/config"
)

// BenchmarkHookCommand times `hearth hook` end to end for one PreToolUse,
// as Claude Code runs it before every tool call a person makes: process
// start included, against a daemon with the Claude Code example's two
// guards. Next to it, in the same run: starting the hearth binary at all
// (`hearth version`), `hearth hook` with --config as the example's
// settings.json runs it, hearth-hook (the command hook that starts in a
// millisecond, posting to the daemon's HTTP endpoint), the HTTP hook
// endpoint itself (what Claude Code's HTTP hook costs, minus Claude
// Code), and the same hook call made in-process through the client.
//
//	go test -run '^$' -bench HookCommand -benchtime 200x ./cmd/hearth/
func BenchmarkHookCommand(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "hearth")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("build hearth: %v\n%s", err, out)
	}
	relay := filepath.Join(b.TempDir(), "hearth-hook")
	if out, err := exec.Command("go", "build", "-o", relay, "../hearth-hook").CombinedOutput(); err != nil {
		b.Fatalf("build hearth-hook: %v\n%s", err, out)
	}
	home := b.TempDir()
	dataDir := filepath.Join(home, ".hearth")
	cfgPath, err := filepath.Abs("../../examples/claude-code/hearth.hcl")
	if err != nil {
		b.Fatal(err)
	}
	s := serve(b, map[string]string{"HEARTH_DATA_DIR": dataDir}, "--config", cfgPath)
	token, err := os.ReadFile(s.tokenFile)
	if err != nil {
		b.Fatal(err)
	}
	allowed, err := os.ReadFile("../../examples/claude-code/payloads/03-pre-read.json")
	if err != nil {
		b.Fatal(err)
	}
	denied, err := os.ReadFile("../../examples/claude-code/payloads/08-pre-read-env.json")
	if err != nil {
		b.Fatal(err)
	}
	run := func(prog string, stdin []byte, args ...string) []byte {
		cmd := exec.Command(prog, args...)
		cmd.Stdin = bytes.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("%s %v: %v", prog, args, err)
		}
		return out
	}
	exe := func(stdin []byte, args ...string) []byte { return run(bin, stdin, args...) }
	b.Run("side=process-start", func(b *testing.B) {
		latencies(b, func() { exe(nil, "version") })
	})
	b.Run("side=hearth-hook-allowed", func(b *testing.B) {
		latencies(b, func() {
			if out := exe(allowed, "--data-dir", dataDir, "hook"); len(out) != 0 {
				b.Fatalf("allowed read answered %s", out)
			}
		})
	})
	b.Run("side=hearth-hook-denied", func(b *testing.B) {
		latencies(b, func() {
			if out := exe(denied, "--data-dir", dataDir, "hook"); !bytes.Contains(out, []byte(`"deny"`)) {
				b.Fatalf("the .env read answered %s", out)
			}
		})
	})
	b.Run("side=hearth-hook-config-allowed", func(b *testing.B) {
		latencies(b, func() {
			if out := exe(allowed, "--data-dir", dataDir, "--config", cfgPath, "hook"); len(out) != 0 {
				b.Fatalf("allowed read answered %s", out)
			}
		})
	})
	url := "http://" + s.http + "/hooks/claude-code"
	b.Run("side=hearth-hook-binary-allowed", func(b *testing.B) {
		latencies(b, func() {
			if out := run(relay, allowed, "--data-dir", dataDir, "--url", url); len(out) != 0 {
				b.Fatalf("allowed read answered %s", out)
			}
		})
	})
	b.Run("side=hearth-hook-binary-denied", func(b *testing.B) {
		latencies(b, func() {
			if out := run(relay, denied, "--data-dir", dataDir, "--url", url); !bytes.Contains(out, []byte(`"deny"`)) {
				b.Fatalf("the .env read answered %s", out)
			}
		})
	})
	b.Run("side=http-endpoint", func(b *testing.B) {
		tok := strings.TrimSpace(string(token))
		latencies(b, func() {
			req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(allowed))
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("hook endpoint: %s", resp.Status)
			}
		})
	})
	b.Run("side=in-process-client", func(b *testing.B) {
		c, err := client.Dial(context.Background(), client.Options{DataDir: dataDir})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		latencies(b, func() {
			if _, err := c.Hook(context.Background(), config.ExternalClaudeCode, "", allowed); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// latencies runs fn b.N times and reports its p50 and p99 in ms.
func latencies(b *testing.B, fn func()) {
	b.Helper()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		fn()
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e6, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e6, "p99-ms")
}

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/host/api/client"
	"github.com/hearth-dev/hearth/host/config"
)

// BenchmarkHookCommand times `hearth hook` end to end for one PreToolUse,
// as Claude Code runs it before every tool call a person makes: process
// start included, against a daemon with the Claude Code example's two
// guards. Next to it, in the same run: starting the hearth binary at all
// (`hearth version`), and the same hook call made in-process through
// the client (what an HTTP hook costs, minus HTTP).
//
//	go test -run '^$' -bench HookCommand -benchtime 200x ./cmd/hearth/
func BenchmarkHookCommand(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "hearth")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("build hearth: %v\n%s", err, out)
	}
	home := b.TempDir()
	dataDir := filepath.Join(home, ".hearth")
	serve(b, map[string]string{"HEARTH_DATA_DIR": dataDir}, "--config", "../../examples/claude-code/hearth.hcl")
	allowed, err := os.ReadFile("../../examples/claude-code/payloads/03-pre-read.json")
	if err != nil {
		b.Fatal(err)
	}
	denied, err := os.ReadFile("../../examples/claude-code/payloads/08-pre-read-env.json")
	if err != nil {
		b.Fatal(err)
	}
	exe := func(stdin []byte, args ...string) []byte {
		cmd := exec.Command(bin, args...)
		cmd.Stdin = bytes.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("hearth %v: %v", args, err)
		}
		return out
	}
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

package config

import (
	"slices"
	"strings"
	"testing"
)

func TestModelBlock(t *testing.T) {
	t.Setenv("HEARTH_TEST_MODEL_KEY", "sk-secret-value")
	src := `
agent "ask" {
  bundled  = "echo"
  pass_env = ["PATH"]
  env      = { OTHER = "x" }
  model {
    model       = "claude-sonnet-4-5"
    api_key_env = "HEARTH_TEST_MODEL_KEY"
    tools       = ["read", "shell"]
    prices {
      input        = 3
      cached_input = 0.3
      output       = 15
    }
  }
}

agent "plain" {
  bundled = "echo"
  model {
    model       = "claude-sonnet-4-5"
    api_key_env = "HEARTH_TEST_MODEL_KEY"
  }
}
`
	cfg, err := Parse([]byte(src), "/etc/hearth/hearth.hcl", opts)
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Agent("ask")
	want := map[string]string{
		"OTHER":                           "x",
		"HEARTH_MODEL_PROVIDER":           "anthropic",
		"HEARTH_MODEL_NAME":               "claude-sonnet-4-5",
		"HEARTH_MODEL_API_KEY_ENV":        "HEARTH_TEST_MODEL_KEY",
		"HEARTH_MODEL_TOOLS":              "read,shell",
		"HEARTH_MODEL_PRICE_INPUT":        "3",
		"HEARTH_MODEL_PRICE_CACHED_INPUT": "0.3",
		"HEARTH_MODEL_PRICE_OUTPUT":       "15",
	}
	for k, v := range want {
		if a.Env[k] != v {
			t.Errorf("env %s = %q, want %q", k, a.Env[k], v)
		}
	}
	if len(a.Env) != len(want) {
		t.Errorf("env %v has more than %v", a.Env, want)
	}
	if !slices.Equal(a.PassEnv, []string{"PATH", "HEARTH_TEST_MODEL_KEY"}) {
		t.Errorf("pass_env %q, want the block's and the key's variable", a.PassEnv)
	}
	if p := cfg.Agent("plain").PassEnv; !slices.Contains(p, "HOME") || !slices.Contains(p, "HEARTH_TEST_MODEL_KEY") {
		t.Errorf("without pass_env: %q, want the defaults and the key's variable", p)
	}
	for _, ag := range cfg.Agents {
		for k, v := range ag.Env {
			if strings.Contains(v, "sk-secret-value") {
				t.Errorf("agent %s: env %s holds the key", ag.Name, k)
			}
		}
	}
	if a.Model == nil || a.Model.Prices.CachedInput != 0.3 || !slices.Equal(a.Model.Tools, []string{"read", "shell"}) {
		t.Errorf("model %+v", a.Model)
	}
}

// TestModelKeyMissing: a model's key that is not set in hearth's
// environment does not stop the file from loading (reading runs and
// sessions needs no key); it is a warning at the model block.
func TestModelKeyMissing(t *testing.T) {
	src := `agent "ask" {
  bundled = "echo"
  model {
    model    = "gpt-4.1"
    provider = "openai"
  }
}`
	o := opts
	o.Getenv = func(string) string { return "" }
	cfg, err := Parse([]byte(src), "hearth.hcl", o)
	if err != nil {
		t.Fatalf("a missing key refused the file: %v", err)
	}
	var b strings.Builder
	if err := cfg.WriteWarnings(&b, 0, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "OPENAI_API_KEY, which is not set") || !strings.Contains(b.String(), "hearth.hcl:3:3") || !strings.Contains(b.String(), "Warning") {
		t.Errorf("warnings:\n%s\nwant the missing OPENAI_API_KEY named at the model block, as a warning", b.String())
	}
	o.Getenv = func(k string) string { return map[string]string{"OPENAI_API_KEY": "sk-x"}[k] }
	if cfg, err = Parse([]byte(src), "hearth.hcl", o); err != nil || len(cfg.Warnings) != 0 {
		t.Errorf("with the key set: %v, warnings %v; want none", err, cfg.Warnings)
	}
}

func TestModelOnExternalAgent(t *testing.T) {
	src := `agent "cc" {
  external = "claude-code"
  model {
    model       = "m"
    api_key_env = ""
    base_url    = "http://localhost:1/v1"
  }
}`
	_, err := Parse([]byte(src), "hearth.hcl", opts)
	if err == nil || !strings.Contains(err.Error(), "Model on an external agent") {
		t.Errorf("got %v, want the model block refused", err)
	}
}

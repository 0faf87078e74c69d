# Questions about this repository, answered by a model through the bundled
# model agent. Each question is placed on the session that already read
# the files it needs: that session's conversation holds them, so the model
# reads nothing again and the provider serves the prefix from its cache.
#
#   export ANTHROPIC_API_KEY=...
#   go run ./cmd/hearth submit ask "What does matcher/score.go compute?" --dir matcher --config examples/ask/hearth.hcl
#
# local.hcl is the same on a local OpenAI-compatible server (Ollama), with
# no key.

agent "ask" {
  bundled   = "model"
  workspace = "../.." # the repository root: tool paths are relative to it
  model {
    provider    = "anthropic"
    model       = "claude-sonnet-4-5"
    api_key_env = "ANTHROPIC_API_KEY"
    # Anthropic's list prices for Sonnet 4.5, dollars per million tokens.
    prices {
      input        = 3
      cached_input = 0.3
      cache_write  = 3.75
      output       = 15
    }
  }
}

guard "no-secrets" {
  hook      = "pre_tool_use"
  condition = "touches('**/.env*') || touches('**/*.pem')"
  message   = "secrets are off limits"
}

# Three questions as one run: `hearth run examples/ask`, then
# `hearth runs show RUN --outputs` for each answer with its tokens and cost.
pipeline "matcher-tour" {
  description = "three questions about the matcher, on one warm conversation"
  agent       = "ask"

  task "score" {
    prompt      = "What does matcher/score.go compute?"
    directories = ["matcher"]
  }
  task "freshness" {
    prompt      = "In matcher/score.go, how is freshness scored?"
    directories = ["matcher"]
  }
  task "index" {
    prompt      = "How does matcher/index.go find candidates without a scan?"
    directories = ["matcher"]
  }
}

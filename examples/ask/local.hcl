# examples/ask on a local OpenAI-compatible server: Ollama here (start it,
# then `ollama pull qwen2.5-coder:7b`); vLLM, llama.cpp's server and LM
# Studio work the same with their base_url. No key, no cost.
#
#   go run ./cmd/hearth submit ask "What does matcher/score.go compute?" --dir matcher --config examples/ask/local.hcl

agent "ask" {
  bundled   = "model"
  workspace = "../.."
  model {
    provider       = "openai"
    model          = "qwen2.5-coder:7b"
    base_url       = "http://localhost:11434/v1"
    api_key_env    = ""
    context_window = 32768
  }
}

guard "no-secrets" {
  hook      = "pre_tool_use"
  condition = "touches('**/.env*') || touches('**/*.pem')"
  message   = "secrets are off limits"
}

# A model agent on a local OpenAI-compatible server (Ollama): no key.
agent "ask" {
  bundled = "echo"
  model {
    provider          = "openai"
    model             = "qwen2.5-coder:7b"
    base_url          = "http://localhost:11434/v1"
    api_key_env       = ""
    context_window    = 32768
    max_output_tokens = 2048
    tools             = ["read", "list", "search"]
    system_prompt     = "Answer briefly."
    prices {
      input        = 0
      cached_input = 0
      output       = 0
    }
  }
}

agent "ask" {
  bundled = "echo"
  env     = { HEARTH_MODEL_NAME = "other" }
  model {
    provider          = "gemini"
    model             = ""
    base_url          = "localhost:11434"
    api_key_env       = "HEARTH_TEST_SURELY_UNSET_KEY"
    context_window    = 1000
    max_output_tokens = 4000
    tools             = ["read", "browse"]
    prices {
      output = -1
    }
  }
}

agent "cloud" {
  bundled = "echo"
  model {
    model       = "claude-sonnet-4-5"
    api_key_env = ""
  }
}

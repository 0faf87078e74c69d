# The essay on a real model: the same four stages, each a task for the
# model agent, each reading what the stages before it decided (their
# artifacts, beside the prompt). Needs ANTHROPIC_API_KEY; hearth.hcl, the
# default, runs offline.
#
#   go run ./cmd/hearth run examples/essay/model.hcl

agent "essayist" {
  bundled = "model"
  model {
    model = "claude-sonnet-4-5"
    prices {
      input        = 3
      cached_input = 0.3
      cache_write  = 3.75
      output       = 15
    }
  }
}

pipeline "essay" {
  description = "a short essay in four stages, written by a model"
  agent       = "essayist"
  budget      = 0.50 # dollars

  task "thesis" {
    prompt = "Write a one-sentence thesis for a short argument essay on remote work, for team leads."
  }
  task "outline" {
    prompt     = "Outline the essay on that thesis: an introduction, three sections, a conclusion, one line each."
    depends_on = ["thesis"]
  }
  task "arguments" {
    prompt     = "For each section of the outline, give the strongest argument and one piece of evidence."
    depends_on = ["outline"]
  }
  task "draft" {
    prompt     = "Write the essay, about 600 words, from the outline and the arguments."
    depends_on = ["arguments"]
  }
}

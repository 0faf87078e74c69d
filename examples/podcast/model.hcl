# The podcast on a real model: research, script, review and show notes,
# each a task for a model agent, within a budget in dollars. Needs
# ANTHROPIC_API_KEY; hearth.hcl, the default, runs offline (and shows the
# quality gate, which needs the stand-in's quality metric).
#
#   go run ./cmd/hearth run examples/podcast/model.hcl

agent "producer" {
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

pipeline "podcast" {
  description = "a podcast episode: research, script, review, show notes, written by a model"
  agent       = "producer"
  budget      = 1.00 # dollars: the run stops before a task that would start at or over it

  task "research" {
    prompt = "Research an episode on how cities adapt to heat waves: five facts, each with where it comes from."
  }
  task "write_script" {
    prompt     = "Write a two-host script of about 800 words from the research."
    depends_on = ["research"]
  }
  task "evaluate" {
    prompt     = "Review the script: what works, what to cut, and a score from 0 to 10."
    depends_on = ["write_script"]
  }
  task "synthesize" {
    prompt     = "Write the show notes: a summary, the facts with their sources, and chapter marks."
    depends_on = ["evaluate"]
  }
}

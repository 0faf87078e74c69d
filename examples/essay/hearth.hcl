# Essay writing (seed: "Session State Schema"): thesis -> outline ->
# arguments -> draft, each stage reading the one before from the run's
# state. The bundled workshop agent stands in for the model:
# deterministic, offline.
#
#   go run ./cmd/hearth run examples/essay
#
# What to watch:
#   - Ctrl-C pauses the run at the next stage boundary; hearth runs resume
#     RUN continues where it stopped
#   - hearth runs revisit RUN thesis --impact minor|moderate|major runs the
#     thesis again and treats the later stages by the impact of the change
#   - every version of every stage's output is kept:
#     hearth runs show RUN --outputs --all-versions

agent "essayist" {
  bundled = "workshop"
}

pipeline "essay" {
  description = "a short essay in four stages, with revisits and versioned outputs"
  agent       = "essayist"

  state {
    initial = {
      brief = {
        topic    = "remote work"
        audience = "team leads"
        kind     = "argument" # or "explainer"
      }
    }
  }

  # The seed's session expiration: a run idle for 24 hours is paused, and
  # one paused for 7 days more is flagged abandoned (resume it, or delete
  # it). delete_after would delete it with its outputs; unset, it is kept.
  retention {
    pause_after   = "24h"
    abandon_after = "168h"
  }

  task "thesis" {
    prompt = "essay.thesis delay=400ms"
  }

  task "outline" {
    prompt     = "essay.outline delay=400ms"
    depends_on = ["thesis"]
  }

  task "arguments" {
    prompt     = "essay.arguments delay=400ms"
    depends_on = ["outline"]
  }

  task "draft" {
    prompt     = "essay.draft delay=400ms"
    depends_on = ["arguments"]
  }
}

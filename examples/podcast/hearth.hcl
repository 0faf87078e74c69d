# Podcast production (seed: "Session Coordination Framework"): research ->
# script -> evaluation -> synthesis, one agent per stage, with the
# framework's failure handling. The agents are the bundled workshop agent,
# a deterministic stand-in for LLM agents: the same run gives the same
# output on every machine, offline.
#
#   go run ./cmd/hearth run examples/podcast
#
# What to watch:
#   - research fails twice (fail_attempts=2, a stand-in for a 429 rate
#     limit) and succeeds on its third attempt: retries with backoff.
#   - the evaluator scores the first draft below 0.8; the quality gate
#     "script-quality" sends the work back to write_script with the
#     evaluator's report as feedback; the second draft passes.
#   - every task reports a cost; the run stops before a task that would
#     start over the budget.

agent "researcher" {
  bundled = "workshop"
}

agent "writer" {
  bundled = "workshop"
}

agent "evaluator" {
  bundled = "workshop"
}

agent "synthesizer" {
  bundled = "workshop"
}

# The quality gate: a task_result guard on evaluate's metrics. When it
# fires, the work goes back to write_script, with this message and the
# evaluator's report as its feedback (sdk.Task.Feedback); write_script and
# everything after it run again. After max_loops send-backs in one run,
# the gate gives up and the run stops for a person.
guard "script-quality" {
  hook      = "task_result"
  tasks     = ["evaluate"]
  condition = "result.metrics.quality < 0.8"
  action    = "send_back"
  back_to   = "write_script"
  max_loops = 3
  message   = "script quality is below 0.8; revise the script with the evaluator's recommendations"
}

pipeline "podcast" {
  description = "one episode: research, script, quality evaluation, audio synthesis"
  budget      = 2.00 # the run stops before a task that would start at or over it

  # A failed task is tried again after 200ms, then 400ms: 3 attempts in
  # all, then the run fails (on_failure = "pause" would pause it instead).
  retry {
    attempts = 3
    backoff  = "200ms"
  }

  state {
    initial = {
      episode = {
        number          = 1
        topic           = "the hard problem of consciousness"
        complexity      = 3
        duration_target = 27
      }
    }
  }

  task "research" {
    agent  = "researcher"
    stage  = "researching"
    prompt = "podcast.research fail_attempts=2 delay=150ms"
  }

  task "write_script" {
    agent      = "writer"
    stage      = "writing"
    prompt     = "podcast.write_script delay=150ms"
    depends_on = ["research"]
  }

  task "evaluate" {
    agent      = "evaluator"
    stage      = "evaluating"
    prompt     = "podcast.evaluate passes_at_draft=2 delay=150ms"
    depends_on = ["write_script"]
  }

  task "synthesize" {
    agent      = "synthesizer"
    stage      = "synthesizing"
    prompt     = "podcast.synthesize delay=150ms"
    depends_on = ["evaluate"]
  }
}

# A pipeline that sets every pipeline and task setting to something other
# than its default. TestParsePipelineSettings pins what it decodes to.
agent "writer" {
  bundled = "gotour"
}

agent "critic" {
  bundled = "echo"
}

pipeline "podcast" {
  description = "a script, judged"
  parallel    = 2
  agent       = "writer"
  budget      = 2.5
  on_failure  = "pause"
  files       = ["brief.md"]

  retry {
    attempts    = 5
    backoff     = "2s"
    max_backoff = "1m"
  }

  context {
    budget   = -1
    template = <<-TMPL
      {{range .Steps}}## {{.Artifact.Title}}
      {{end}}
    TMPL
  }

  state {
    initial = {
      inputs = { topic = "net/http", minutes = 5 }
      notes  = []
    }
    owner "writer" {
      writes = ["notes"]
    }
    owner "critic" {
      reads  = ["notes"]
      writes = ["review"]
    }
  }

  retention {
    pause_after   = "1h"
    abandon_after = "48h"
    delete_after  = "720h"
  }

  # The run enters stage "writing" at 9:00 in UTC+1 on 1 December at
  # the earliest; stage "review" has no block, so no rules.
  stage "writing" {
    not_before = "2026-12-01T09:00:00+01:00"
  }

  task "script" {
    prompt       = "write the script"
    files        = ["script.md"]
    directories  = ["episodes"]
    technologies = ["markdown"]
    stage        = "writing"
    metadata     = { episode = 12, tone = "calm" }
    attempts     = 2
    on_failure   = "fail"
  }

  task "review.v2" {
    agent      = "critic"
    prompt     = "judge the script"
    depends_on = ["script"]
    stage      = "review"
  }
}

# The exam study planner (seed: "Exam Study Planner - Session State
# Management") as a run. It moves through the seed's stages:
#
#   created -> collecting_inputs -> ingesting -> estimating -> planning
#           -> reviewing -> completed (or back to planning)
#
# Each task belongs to a stage; entering the next stage is a transition
# that the guards below may block, reading the run's state document, the
# seed's canonical session state. The seed's four agents are four agent
# blocks of the bundled workshop agent (a deterministic stand-in for the
# LLM agents), so that the state owner blocks can tell them apart.
#
#   go run ./cmd/hearth run examples/study-planner

agent "coordinator" {
  bundled = "workshop"
}

agent "ingestion" {
  bundled = "workshop"
}

agent "estimation" {
  bundled = "workshop"
}

agent "planner" {
  bundled = "workshop" # the seed's PlanningReviewerAgent: plans and reviews
}

guard "courses-have-midterms" {
  hook      = "transition"
  from      = ["collecting_inputs"]
  condition = <<-EXPR
    len(state.user_inputs.courses) == 0 ||
    any(state.user_inputs.courses, (.midterm_date ?? "") == "")
  EXPR
  message   = "collecting_inputs cannot exit until each course has a midterm date"
}

guard "files-ingested" {
  hook      = "transition"
  from      = ["ingesting"]
  condition = <<-EXPR
    any(keys(state.file_registry), {
      let f = state.ingestion_state.files[#];
      f == nil || !(f.status == "complete" || (f.status == "partial" && (f.warning ?? "") != ""))
    })
  EXPR
  message   = "ingesting cannot exit until each required file is complete, or explicitly marked partial with a warning"
}

guard "every-day-planned" {
  hook      = "transition"
  from      = ["planning"]
  condition = <<-EXPR
    any(
      dates(state.planning_state.start_date, state.planning_state.last_midterm_date),
      # not in map(state.planning_state.plan_rows, .date)
    )
  EXPR
  message   = "planning cannot exit until all calendar days from the start date to the last midterm are in plan_rows"
}

pipeline "study-plan" {
  description = "a day-by-day study plan for two midterms, from the syllabi and notes attached"

  # Attached to every run once, by content (sha256 + size), and read in
  # place by the agents; immutable once attached. Add more with --file.
  files = [
    "files/calc2-syllabus.md",
    "files/calc2-notes.md",
    "files/chem1-syllabus.md",
  ]

  retry {
    attempts = 3
    backoff  = "200ms"
  }

  state {
    # The seed's user_inputs, as the UI would collect them; replace them
    # with --set user_inputs=@my-inputs.json.
    initial = {
      user_inputs = {
        timezone   = "America/Los_Angeles"
        start_date = "2026-02-16"
        courses = [
          { course_id = "course_calc2", course_name = "Calculus II", midterm_date = "2026-02-21" },
          { course_id = "course_chem1", course_name = "Chemistry I", midterm_date = "2026-02-26" },
        ]
        shared_constraints = {
          max_minutes_per_day = 240
          preferred_rest_day  = "Sunday"
        }
      }
    }

    # The seed's read/write ownership (section 7). A write outside an
    # agent's sections fails the task for good, naming the agent and the
    # section. An owner without reads reads everything.
    owner "coordinator" {
      # status, checkpoints and the final artifacts, per the seed; here it
      # also takes the user's inputs and registers the uploaded files.
      writes = ["status", "user_inputs", "file_registry", "artifacts"]
    }
    owner "ingestion" {
      reads  = ["user_inputs", "file_registry", "ingestion_state"]
      writes = ["ingestion_state"]
    }
    owner "estimation" {
      reads  = ["ingestion_state"]
      writes = ["estimation_state"]
    }
    owner "planner" {
      reads  = ["user_inputs", "estimation_state", "planning_state"]
      writes = ["planning_state"]
    }
  }

  task "collect" {
    agent  = "coordinator"
    stage  = "collecting_inputs"
    prompt = "study.collect"
  }

  # Chunks are 6-line windows of each file, marked done one by one. The
  # first attempt crashes the plugin after 4 chunks (crash_after_chunks,
  # to show chunk resume; remove it for a plain run): the host retries,
  # and the second attempt skips the chunks already done.
  task "ingest" {
    agent      = "ingestion"
    stage      = "ingesting"
    prompt     = "study.ingest chunk_lines=6 crash_after_chunks=4 delay=100ms"
    depends_on = ["collect"]
  }

  task "estimate" {
    agent      = "estimation"
    stage      = "estimating"
    prompt     = "study.estimate"
    depends_on = ["ingest"]
  }

  task "plan" {
    agent      = "planner"
    stage      = "planning"
    prompt     = "study.plan"
    depends_on = ["estimate"]
  }

  task "review" {
    agent      = "planner"
    stage      = "reviewing"
    prompt     = "study.review"
    depends_on = ["plan"]
  }

  # No stage: publishing is part of reviewing; when it succeeds the run
  # enters "completed".
  task "publish" {
    agent      = "coordinator"
    prompt     = "study.publish"
    depends_on = ["review"]
  }
}

# The exam study planner's lifecycle guards (seed: "Exam Study Planner -
# Session State Management", section 6). A run moves through stages:
#
#   created -> collecting_inputs -> ingesting -> estimating -> planning
#           -> reviewing -> completed (or back to planning)
#
# and these guards keep a stage from being left too early. Each reads the
# run's state document, the seed's canonical session state.

agent "planner" {
  bundled = "gotour"   # stands in for the planner's agents until the runs example
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

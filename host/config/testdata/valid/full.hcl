data_dir = "./.hearth"

agent "tour" {
  bundled  = "gotour"
  capacity = 2
  pool {
    max_sessions = 8
    idle_timeout = "10m"
    when_full    = "retire_idle"
  }
}

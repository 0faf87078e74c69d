# An operator's typical first mistakes: a misspelled attribute and a
# duration without a unit.
agent "tour" {
  bundled  = "gotour"
  capasity = 2

  pool {
    idle_timeout = "30"
  }
}

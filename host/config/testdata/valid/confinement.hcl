# Plugins under Landlock: the file's default, and one agent's grants.
confinement = "require"

agent "coder" {
  bundled       = "gotour"
  read_paths    = ["docs", "/usr/share/dict"]
  write_paths   = ["/srv/build"]
  connect_ports = [443]
}

agent "legacy" {
  command     = ["/opt/legacy/agent"]
  confinement = "off"
}

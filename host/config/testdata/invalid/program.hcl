agent "mine" {
  command = ["./bin/my-agent"]
  sha256  = "not-a-checksum"
}

agent "tour" {
  bundled = "gotuor"
}

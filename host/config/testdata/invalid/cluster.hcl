cluster {
  endpoints = ["http://127.0.0.1:2379", "127.0.0.1:22379"]
  advertise = "0.0.0.0:7420"
  host_id   = "box/1"
  lease_ttl = "1500ms"
  publish_interval = "2 seconds"
}

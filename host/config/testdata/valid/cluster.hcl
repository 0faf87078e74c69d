agent "coder" {
  bundled = "gotour"
}

cluster {
  endpoints        = ["https://10.0.0.5:2379", "https://10.0.0.6:2379"]
  advertise        = "10.0.0.7:7420"
  lease_ttl        = "15s"
  publish_interval = "500ms"
  compact_interval = "30m"
  tls {
    ca_file   = "etcd/ca.pem"
    cert_file = "etcd/host.pem"
    key_file  = "/etc/hearth/host-key.pem"
  }
}

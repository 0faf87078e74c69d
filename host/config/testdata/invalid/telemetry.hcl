telemetry {
  endpoint     = "127.0.0.1:4317"
  protocol     = "thrift"
  headers      = { "bad header" = "x" }
  sampler      = "always_on"
  sampler_arg  = 0.5
  service_name = " "
  trace_url    = "http://localhost:16686/trace/"
  exporter     = "otlp"
}

agent "a" {
  bundled = "gotour"
}

telemetry {
  endpoint            = "http://127.0.0.1:4317"
  protocol            = "grpc"
  headers             = { "x-api-key" = "k" }
  sampler             = "parentbased_traceidratio"
  sampler_arg         = 0.25
  service_name        = "hearth-ci"
  resource_attributes = { "deployment.environment" = "ci" }
  trace_url           = "http://localhost:16686/trace/{trace_id}"
}
